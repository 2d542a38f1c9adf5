// What each fault of FaultSource and FaultPublisher does (the suites run them with none armed).
#include "evident/fault_transport.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace evident {
namespace {

std::vector<std::string> Three() { return {R"({"id":"a"})", R"({"id":"b"})", R"({"id":"c"})"}; }

TEST(FaultSource, TheNthCallOfAKindFailsAndReachesNothing) {
  FaultSource source(NewMemorySource("m", Three()));
  source.Add({.call = SourceFault::Call::kFetch, .nth = 2, .code = Code::kIoError});
  source.Add({.call = SourceFault::Call::kAcknowledge, .nth = 1});
  ASSERT_TRUE(source.Start(std::nullopt).ok());
  Message m;
  ASSERT_EQ(source.Fetch(m, 0).value(), Source::Fetched::kMessage);
  EXPECT_EQ(m.bytes, Three()[0]);
  const Result<Source::Fetched> failed = source.Fetch(m, 0);
  EXPECT_EQ(failed.status().code(), Code::kIoError);
  ASSERT_EQ(source.Fetch(m, 0).value(), Source::Fetched::kMessage);
  EXPECT_EQ(m.bytes, Three()[1]);  // the failed call took nothing
  EXPECT_EQ(source.Acknowledge(m.cursor).code(), Code::kUnavailable);
  EXPECT_TRUE(source.Acknowledge(m.cursor).ok());  // the second is not armed
  EXPECT_EQ(source.faults_fired(), 2);
}

TEST(FaultSource, AnUnreachableSpellWaitsAndSaysSoThenGoesOn) {
  FaultSource source(NewMemorySource("m", Three()));
  source.Add({.call = SourceFault::Call::kFetch, .nth = 1, .unreachable_calls = 3});
  ASSERT_TRUE(source.Start(std::nullopt).ok());
  Message m;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(source.Fetch(m, 0).value(), Source::Fetched::kWouldWait);
    EXPECT_TRUE(source.unreachable());
  }
  EXPECT_EQ(source.Fetch(m, 0).value(), Source::Fetched::kMessage);
  EXPECT_FALSE(source.unreachable());
  EXPECT_EQ(m.bytes, Three()[0]);
}

class FaultPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("evident-fault-publisher-" + std::to_string(getpid()));
    std::filesystem::remove(path_);
    publisher_ =
        std::make_unique<FaultPublisher>(OpenNdjsonPublisher(PosixEnv(), path_.string()).value());
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::vector<std::string> Held() {
    std::vector<std::string> out;
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  static std::vector<OutgoingMessage> Batch() {
    return {{"p0.x", "a", R"({"id":"a"})"}, {"p0.x", "b", R"({"id":"b"})"}};
  }

  std::filesystem::path path_;
  std::unique_ptr<FaultPublisher> publisher_;
};

TEST_F(FaultPublisherTest, AFailedPublishReachesNothing) {
  publisher_->Add({.nth = 1});
  EXPECT_EQ(publisher_->Publish(Batch()).status().code(), Code::kUnavailable);
  EXPECT_TRUE(Held().empty());
  EXPECT_EQ(publisher_->Publish(Batch()).value(), 2u);
  EXPECT_EQ(Held().size(), 2u);
}

TEST_F(FaultPublisherTest, APrefixIsAcceptedAndSaidSo) {
  publisher_->Add({.nth = 1, .kind = PublisherFault::Kind::kAcceptPrefix, .accepted = 1});
  EXPECT_EQ(publisher_->Publish(Batch()).value(), 1u);
  EXPECT_EQ(Held(), std::vector<std::string>{R"({"id":"a"})"});
}

// The destination has the batch, the relay hears a failure: it will offer the batch again.
TEST_F(FaultPublisherTest, ABatchAcceptedThenFailedIsHeldAlready) {
  publisher_->Add({.nth = 1, .kind = PublisherFault::Kind::kAcceptThenFail});
  EXPECT_FALSE(publisher_->Publish(Batch()).ok());
  EXPECT_EQ(Held().size(), 2u);
  EXPECT_EQ(publisher_->faults_fired(), 1);
}

}  // namespace
}  // namespace evident
