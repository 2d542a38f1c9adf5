// serve/signature.h — Standard Webhooks signatures (standardwebhooks.com, v1): HMAC-SHA256 of
// "{webhook-id}.{webhook-timestamp}.{body}" with the sender's secret, base64-encoded, sent as
// "v1,<signature>" in webhook-signature (several separated by spaces, any one may match).
// Secrets are written "whsec_<base64>" (the prefix is optional); the key is the decoded bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident::serve {

// kUnsigned: the request carries something of a signed source outside the signed body
// (binary mode's headers).
enum class SignatureVerdict : uint8_t {
  kValid,
  kMissing,
  kMalformed,
  kStale,
  kMismatch,
  kUnsigned
};
// Stable codes: "valid", "missing-signature", "malformed-signature", "stale-signature",
// "bad-signature", "unsigned-attributes".
std::string_view SignatureReason(SignatureVerdict verdict);

struct SignedRequest {
  std::string_view id, timestamp, signature;  // the three headers; empty when absent
  std::string_view body;
};

// Checks `request` against `secrets` (raw keys; one match is enough) at `now_s`, allowing
// `tolerance_s` of clock difference either way. The comparison takes constant time.
SignatureVerdict VerifySignature(const SignedRequest& request,
                                 const std::vector<std::string>& secrets, int64_t now_s,
                                 int64_t tolerance_s);

// "v1,<base64>" for `request` under `secret` (for senders and tests).
std::string SignV1(std::string_view secret, std::string_view id, std::string_view timestamp,
                   std::string_view body);

// The key of "whsec_<base64>" or "<base64>"; kInvalidArgument when it is not base64 or empty.
Result<std::string> DecodeWebhookSecret(std::string_view text);

}  // namespace evident::serve
