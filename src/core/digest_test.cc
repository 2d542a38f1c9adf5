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

}  // namespace
}  // namespace evident
