#include "core/digest.h"

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>

namespace evident {
namespace {

// SHA-256 fetched from OpenSSL's default provider once: EVP_sha256() on OpenSSL 3 makes every
// EVP_Digest look the algorithm up again (a locked provider query), which cost more than the
// hash of a small payload itself (callgrind: about 8,000 of 10,000 instructions per digest).
const EVP_MD* Sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

struct ContextFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

// One context per thread, reset for each digest (EVP_DigestInit_ex keeps its allocation).
EVP_MD_CTX* Context() {
  thread_local const std::unique_ptr<EVP_MD_CTX, ContextFree> ctx(EVP_MD_CTX_new());
  return ctx.get();
}

// SHA-256 over `parts` in turn into `out` (its first `size` bytes), each part preceded by its
// length as 8 little-endian bytes when `length_prefixed`; false when OpenSSL cannot allocate or
// has no SHA-256.
using DigestBytes = std::array<unsigned char, EVP_MAX_MD_SIZE>;
bool Sha256Of(std::initializer_list<std::string_view> parts, bool length_prefixed, DigestBytes& out,
              unsigned int& size) {
  const EVP_MD* md = Sha256();
  EVP_MD_CTX* ctx = Context();
  bool ok = md != nullptr && ctx != nullptr && EVP_DigestInit_ex(ctx, md, nullptr) == 1;
  for (const std::string_view part : parts) {
    std::array<unsigned char, 8> length{};
    uint64_t n = part.size();
    for (size_t i = 0; i < length.size(); ++i, n >>= 8) length[i] = static_cast<unsigned char>(n);
    ok = ok && (!length_prefixed || EVP_DigestUpdate(ctx, length.data(), length.size()) == 1) &&
         EVP_DigestUpdate(ctx, part.data(), part.size()) == 1;
  }
  return ok && EVP_DigestFinal_ex(ctx, out.data(), &size) == 1;
}

// The first kLedgerKeyDigestBytes bytes of SHA-256 over the length-prefixed parts.
Result<std::string> KeyDigest(std::initializer_list<std::string_view> parts, const char* what) {
  DigestBytes digest{};
  unsigned int size = 0;
  if (!Sha256Of(parts, true, digest, size) || size < kLedgerKeyDigestBytes) {
    return Status::Internal(std::string("SHA-256 is unavailable: no ") + what + " digest");
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), kLedgerKeyDigestBytes);
}

}  // namespace

Result<std::string> LedgerKeyDigest(std::string_view consumer, std::string_view source,
                                    std::string_view event_id) {
  return KeyDigest({consumer, source, event_id}, "ledger key");
}

Result<std::string> IntentKeyDigest(std::string_view key) { return KeyDigest({key}, "effect key"); }

// These fail only when OpenSSL cannot allocate or has no SHA-256: no digest is then written, and
// the text says so rather than naming a wrong one.
std::string Sha256Digest(std::string_view bytes) {
  DigestBytes digest{};
  unsigned int size = 0;
  if (!Sha256Of({bytes}, false, digest, size)) return "sha256:unavailable";
  std::string text = "sha256:";
  AppendLowerHex(std::string_view(reinterpret_cast<const char*>(digest.data()), size), text);
  return text;
}

}  // namespace evident
