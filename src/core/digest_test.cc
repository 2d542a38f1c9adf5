#include "core/digest.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace evident {
namespace {

// FIPS 180-2's vectors, through the one fetched algorithm and a context reused per thread.
TEST(Sha256Digest, KnownVectorsAndAReusedContext) {
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(Sha256Digest("abc"),
              "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(Sha256Digest(""),
              "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }
  std::vector<std::string> seen(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&seen, t] {
      for (int i = 0; i < 1000; ++i) seen[t] = Sha256Digest("abc");
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& s : seen) EXPECT_EQ(s, Sha256Digest("abc"));
}

// 16 bytes of SHA-256 over the length-prefixed parts (the vector computed with Python's hashlib):
// moving a byte from one part to the next gives another digest.
TEST(LedgerKeyDigest, SixteenBytesOfLengthPrefixedParts) {
  const std::string digest = LedgerKeyDigest("orders", "/shop", "e-1").value();
  ASSERT_EQ(digest.size(), kLedgerKeyDigestBytes);
  EXPECT_EQ(LowerHex(digest), "2ff121decec24d1b7ac18752d8db48af");
  EXPECT_EQ(LowerHex(std::string("\x00\xff\x10", 3)), "00ff10");
  EXPECT_NE(LedgerKeyDigest("ab", "c", "d").value(), LedgerKeyDigest("a", "bc", "d").value());
  EXPECT_EQ(LedgerKeyDigest("ab", "c", "d").value(), LedgerKeyDigest("ab", "c", "d").value());
}

// An effect key's digest: the key alone, length-prefixed (the vector from Python's hashlib).
TEST(IntentKeyDigest, SixteenBytesOfTheLengthPrefixedKey) {
  const std::string digest = IntentKeyDigest("reserve:order-417:v2").value();
  ASSERT_EQ(digest.size(), kLedgerKeyDigestBytes);
  EXPECT_EQ(LowerHex(digest), "3310b66fafb79cfd17637d9f1bf8fdb7");
  EXPECT_NE(IntentKeyDigest("a").value(), IntentKeyDigest("b").value());
}

}  // namespace
}  // namespace evident
