// core/digest.h — "sha256:<hex>" digests of bytes, as evident writes them everywhere it names
// content by its digest (an effect's answer, a conflicting payload).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "evident/status.h"

namespace evident {

// "sha256:" and the 64 lowercase hex digits of SHA-256 over `bytes` (OpenSSL).
std::string Sha256Digest(std::string_view bytes);

// The compact form of a ledger key that retention keeps past its horizon (store_retention.h):
// the first kLedgerKeyDigestBytes bytes of SHA-256 over the consumer, source and event id, each
// preceded by its length as 8 bytes (so no two keys share an input). 128 bits: among n keys the
// chance that two share a digest is about n^2 / 2^129 (1e12 keys: under 2e-15).
inline constexpr size_t kLedgerKeyDigestBytes = 16;
Result<std::string> LedgerKeyDigest(std::string_view consumer, std::string_view source,
                                    std::string_view event_id);

// The compact form of an effect intent's key that retention keeps once the intent goes
// (store_retention.h, kIntent): the first kLedgerKeyDigestBytes bytes of SHA-256 over the key
// preceded by its length as 8 bytes, with the same collision bound.
Result<std::string> IntentKeyDigest(std::string_view key);

// `bytes` as lowercase hex appended to `out` (PostgreSQL's decode(..., 'hex') reads it).
inline void AppendLowerHex(std::string_view bytes, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + 2 * bytes.size());
  for (const char c : bytes) {
    out.push_back(kHex[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kHex[static_cast<unsigned char>(c) & 0xF]);
  }
}
inline std::string LowerHex(std::string_view bytes) {
  std::string out;
  AppendLowerHex(bytes, out);
  return out;
}

// The second a digest keeps of its receipt's commit time (floor), and the rule that forgets it:
// a digest goes when its whole second came before the horizon (committed_s < FloorSeconds(ms)).
inline int64_t FloorSeconds(int64_t ms) { return ms >= 0 ? ms / 1000 : -((999 - ms) / 1000); }

}  // namespace evident
