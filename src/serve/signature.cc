#include "serve/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>

#include "core/base64.h"

namespace evident::serve {

std::string_view SignatureReason(SignatureVerdict verdict) {
  switch (verdict) {
    case SignatureVerdict::kValid:
      return "valid";
    case SignatureVerdict::kMissing:
      return "missing-signature";
    case SignatureVerdict::kMalformed:
      return "malformed-signature";
    case SignatureVerdict::kStale:
      return "stale-signature";
    case SignatureVerdict::kMismatch:
      return "bad-signature";
    case SignatureVerdict::kUnsigned:
      return "unsigned-attributes";
  }
  return "bad-signature";
}

std::string SignV1(std::string_view secret, std::string_view id, std::string_view timestamp,
                   std::string_view body) {
  std::string content;
  content.reserve(id.size() + timestamp.size() + body.size() + 2);
  content.append(id).append(".").append(timestamp).append(".").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac, &mac_size);
  std::string out = "v1,";
  AppendBase64(std::string_view(reinterpret_cast<const char*>(mac), mac_size), out);
  return out;
}

SignatureVerdict VerifySignature(const SignedRequest& request,
                                 const std::vector<std::string>& secrets, int64_t now_s,
                                 int64_t tolerance_s) {
  if (request.id.empty() || request.timestamp.empty() || request.signature.empty()) {
    return SignatureVerdict::kMissing;
  }
  int64_t timestamp = 0;
  const char* end = request.timestamp.data() + request.timestamp.size();
  auto [ptr, ec] = std::from_chars(request.timestamp.data(), end, timestamp);
  if (ec != std::errc() || ptr != end) return SignatureVerdict::kMalformed;
  if (timestamp < now_s - tolerance_s || timestamp > now_s + tolerance_s) {
    return SignatureVerdict::kStale;
  }
  // Bounded: a header holds a few signatures; more than 16 are not looked at.
  constexpr int kSignaturesMax = 16;
  int seen = 0;
  for (const std::string& secret : secrets) {
    const std::string expected = SignV1(secret, request.id, request.timestamp, request.body);
    std::string_view rest = request.signature;
    seen = 0;
    while (!rest.empty() && seen < kSignaturesMax) {
      const size_t space = rest.find(' ');
      const std::string_view one = rest.substr(0, space);
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      // Only v1 (HMAC-SHA256) entries count: another scheme's ("v1a,": asymmetric) or a
      // malformed entry is not a signature this daemon can check.
      if (one.size() <= 3 || one.substr(0, 3) != "v1,") continue;
      ++seen;
      if (one.size() == expected.size() &&
          CRYPTO_memcmp(one.data(), expected.data(), expected.size()) == 0) {
        return SignatureVerdict::kValid;
      }
    }
  }
  return seen == 0 ? SignatureVerdict::kMalformed : SignatureVerdict::kMismatch;
}

Result<std::string> DecodeWebhookSecret(std::string_view text) {
  constexpr std::string_view kPrefix = "whsec_";
  if (text.rfind(kPrefix, 0) == 0) text.remove_prefix(kPrefix.size());
  if (text.empty() || text.size() % 4 != 0 || text.size() > 4096) {
    return Status::InvalidArgument("a webhook secret is whsec_ and base64 (a multiple of 4 chars)");
  }
  std::string key(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(key.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Status::InvalidArgument("a webhook secret is whsec_ and base64");
  size_t padding = 0;
  if (text.back() == '=') ++padding;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++padding;
  key.resize(static_cast<size_t>(n) - padding);
  if (key.empty()) return Status::InvalidArgument("a webhook secret may not be empty");
  return key;
}

}  // namespace evident::serve
