#include "serve/signature.h"

#include <gtest/gtest.h>

namespace evident::serve {
namespace {

// The example of the Standard Webhooks specification.
constexpr std::string_view kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::string_view kId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr std::string_view kTimestamp = "1614265330";
constexpr std::string_view kBody = R"({"test": 2432232314})";
constexpr std::string_view kSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

TEST(SignatureTest, TheSpecificationsExampleSigns) {
  Result<std::string> key = DecodeWebhookSecret(kSecret);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(SignV1(*key, kId, kTimestamp, kBody), kSignature);
  const SignedRequest request{kId, kTimestamp, kSignature, kBody};
  EXPECT_EQ(VerifySignature(request, {*key}, 1614265330, 300), SignatureVerdict::kValid);
}

TEST(SignatureTest, OneOfSeveralSignaturesAndSecretsIsEnough) {
  const std::string key = *DecodeWebhookSecret(kSecret);
  const std::string header = "v1,AAAA v1a,xyz " + std::string(kSignature);
  const SignedRequest request{kId, kTimestamp, header, kBody};
  EXPECT_EQ(VerifySignature(request, {"other-key", key}, 1614265330, 300),
            SignatureVerdict::kValid);
}

TEST(SignatureTest, ChangedBodyIdOrKeyDoesNotVerify) {
  const std::string key = *DecodeWebhookSecret(kSecret);
  EXPECT_EQ(VerifySignature({kId, kTimestamp, kSignature, R"({"test": 2432232315})"}, {key},
                            1614265330, 300),
            SignatureVerdict::kMismatch);
  EXPECT_EQ(VerifySignature({"msg_other", kTimestamp, kSignature, kBody}, {key}, 1614265330, 300),
            SignatureVerdict::kMismatch);
  EXPECT_EQ(VerifySignature({kId, kTimestamp, kSignature, kBody}, {"k"}, 1614265330, 300),
            SignatureVerdict::kMismatch);
}

TEST(SignatureTest, StaleMissingAndMalformed) {
  const std::string key = *DecodeWebhookSecret(kSecret);
  const SignedRequest request{kId, kTimestamp, kSignature, kBody};
  EXPECT_EQ(VerifySignature(request, {key}, 1614265330 + 301, 300), SignatureVerdict::kStale);
  EXPECT_EQ(VerifySignature(request, {key}, 1614265330 - 301, 300), SignatureVerdict::kStale);
  EXPECT_EQ(VerifySignature(request, {key}, 1614265330 + 300, 300), SignatureVerdict::kValid);
  EXPECT_EQ(VerifySignature({kId, "", kSignature, kBody}, {key}, 0, 300),
            SignatureVerdict::kMissing);
  EXPECT_EQ(VerifySignature({"", kTimestamp, kSignature, kBody}, {key}, 0, 300),
            SignatureVerdict::kMissing);
  EXPECT_EQ(VerifySignature({kId, "16x", kSignature, kBody}, {key}, 0, 300),
            SignatureVerdict::kMalformed);
  EXPECT_EQ(VerifySignature({kId, kTimestamp, "   ", kBody}, {key}, 1614265330, 300),
            SignatureVerdict::kMalformed);
  // Issue 40: entries of another scheme ("v1a": asymmetric) or without a version are not v1
  // signatures that failed: the header holds none this daemon can check.
  const std::string v1a = "v1a" + std::string(kSignature).substr(2);
  for (const std::string& header : {v1a, std::string(kSignature).substr(3), std::string("v1,"),
                                    std::string("v2,abc v1a,def")}) {
    EXPECT_EQ(VerifySignature({kId, kTimestamp, header, kBody}, {key}, 1614265330, 300),
              SignatureVerdict::kMalformed)
        << header;
  }
  // Beside a v1 entry they are passed over: the v1 entry decides.
  EXPECT_EQ(VerifySignature({kId, kTimestamp, v1a + " " + std::string(kSignature), kBody}, {key},
                            1614265330, 300),
            SignatureVerdict::kValid);
  EXPECT_EQ(VerifySignature({kId, kTimestamp, v1a + " v1,AAAA", kBody}, {key}, 1614265330, 300),
            SignatureVerdict::kMismatch);
  EXPECT_EQ(SignatureReason(SignatureVerdict::kStale), "stale-signature");
}

TEST(SignatureTest, SecretsAreBase64WithAnOptionalPrefix) {
  EXPECT_EQ(*DecodeWebhookSecret("whsec_aGVsbG8="), "hello");
  EXPECT_EQ(*DecodeWebhookSecret("aGVsbG8h"), "hello!");
  EXPECT_FALSE(DecodeWebhookSecret("whsec_").ok());
  EXPECT_FALSE(DecodeWebhookSecret("whsec_abc").ok());
  EXPECT_FALSE(DecodeWebhookSecret("whsec_a*c=").ok());
}

}  // namespace
}  // namespace evident::serve
