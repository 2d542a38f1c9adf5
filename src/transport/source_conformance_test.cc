// The Source conformance suite: every implementation of evident/source.h passes it unchanged.
// A backend registers a factory that makes a source holding given messages, with what it claims
// it can do (transport_backends.h; RocksDB's env test pattern): every case it claims is checked,
// and the clear refusal of the rest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "evident/source.h"
#include "transport/transport_backends.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

using Redelivery = SourceCapabilities::Redelivery;

class SourceConformance : public ::testing::TestWithParam<SourceBackend> {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::temp_directory_path() / ("evident-source-" + std::to_string(getpid()) + "-" +
                                        test.substr(0, test.find('/')) + "-" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Source> Open() {
    std::unique_ptr<Source> source = GetParam().open(dir_, messages_);
    EXPECT_NE(source, nullptr);
    return source;
  }
  bool Ends() const { return GetParam().can.ends; }

  // Fetches until the end (a source that ends), or (one that does not: a broker) until `want`
  // messages came, waiting up to 5 s for each, and then nothing more within a quiet while; the
  // messages' bytes, and the last message's cursor. A broker may hold a message back until an
  // earlier reader's ack wait ends (2 s here): it came to that reader's buffer, unhanded.
  std::vector<std::string> Drain(Source& source, size_t want, Cursor* last = nullptr,
                                 std::vector<int64_t>* indexes = nullptr) {
    std::vector<std::string> out;
    Message m;
    while (true) {
      const int wait_ms = Ends() ? 0 : out.size() < want ? 5000 : kQuietMs;
      const Result<Source::Fetched> fetched = source.Fetch(m, wait_ms);
      EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
      if (!fetched.ok() || *fetched != Source::Fetched::kMessage) break;
      out.push_back(m.bytes);
      if (last != nullptr) *last = m.cursor;
      if (indexes != nullptr) indexes->push_back(m.index);
    }
    return out;
  }
  // Long enough for a broker on this machine to deliver what it holds; shorter than the suite's
  // ack wait (2 s), so a message fetched and not acknowledged does not come again meanwhile.
  static constexpr int kQuietMs = 500;

  // The next message, waiting for a broker's.
  static void FetchOne(Source& source, Message& m) {
    const Result<Source::Fetched> fetched = source.Fetch(m, 5000);
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    ASSERT_EQ(*fetched, Source::Fetched::kMessage);
  }

  // What a source says when it holds nothing more: kEnd, or (a broker) kWouldWait.
  void ExpectNothingMore(Source& source) {
    Message m;
    const Result<Source::Fetched> fetched = source.Fetch(m, Ends() ? 0 : kQuietMs);
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    EXPECT_EQ(*fetched, Ends() ? Source::Fetched::kEnd : Source::Fetched::kWouldWait) << m.bytes;
  }

  // A source that does not resume from a position refuses one (it knows where it is by other
  // means, a broker's durable consumer) or ignores it: it never skips a message it was not
  // told was decided.
  void ExpectNothingSkipped(Source& source, const std::string& position) {
    const Status started = source.Start(position);
    if (!started.ok()) {
      EXPECT_EQ(started.code(), Code::kFailedPrecondition) << started.ToString();
      return;
    }
    EXPECT_EQ(Drain(source, messages_.size()), messages_);
    EXPECT_EQ(source.skipped(), 0);
  }

  fs::path dir_;
  std::vector<std::string> messages_ = {R"({"id":"a"})", R"({"id":"b"})", R"({"id":"c"})",
                                        R"({"id":"d"})"};
};

TEST_P(SourceConformance, DeliversEveryMessageInOrderThenNothingMore) {
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  std::vector<int64_t> indexes;
  EXPECT_EQ(Drain(*source, messages_.size(), nullptr, &indexes), messages_);
  EXPECT_TRUE(std::is_sorted(indexes.begin(), indexes.end()));
  EXPECT_EQ(std::adjacent_find(indexes.begin(), indexes.end()), indexes.end());  // distinct
  ExpectNothingMore(*source);                                                    // and stays so
  EXPECT_EQ(source->skipped(), 0);
}

TEST_P(SourceConformance, ResumesAfterTheEncodedPositionOfTheLastDecidedMessage) {
  Cursor after_second;
  {
    auto source = Open();
    ASSERT_TRUE(source->Start(std::nullopt).ok());
    Message m;
    ASSERT_NO_FATAL_FAILURE(FetchOne(*source, m));
    ASSERT_NO_FATAL_FAILURE(FetchOne(*source, m));
    after_second = m.cursor;
    EXPECT_TRUE(source->Acknowledge(after_second).ok());
    EXPECT_TRUE(source->FlushAcknowledgements(5000).ok());
  }
  auto source = Open();
  const std::string position = source->EncodePosition(after_second);
  const std::vector<std::string> rest(messages_.begin() + 2, messages_.end());
  if (GetParam().can.remembers_acknowledgements) {  // whatever the position says
    ASSERT_TRUE(source->Start(position).ok());
    EXPECT_EQ(Drain(*source, rest.size()), rest);
    return;
  }
  if (!GetParam().can.resumes_from_position) {
    ExpectNothingSkipped(*source, position);
    return;
  }
  ASSERT_TRUE(source->Start(position).ok());
  EXPECT_EQ(Drain(*source, rest.size()), rest);
  EXPECT_EQ(source->skipped(), 2);
}

TEST_P(SourceConformance, ThePositionOfTheLastMessageLeavesNothing) {
  Cursor last;
  {
    auto source = Open();
    ASSERT_TRUE(source->Start(std::nullopt).ok());
    ASSERT_EQ(Drain(*source, messages_.size(), &last).size(), messages_.size());
    ASSERT_TRUE(source->Acknowledge(last).ok());
    ASSERT_TRUE(source->FlushAcknowledgements(5000).ok());
  }
  auto source = Open();
  if (GetParam().can.remembers_acknowledgements) {
    ASSERT_TRUE(source->Start(source->EncodePosition(last)).ok());
    EXPECT_TRUE(Drain(*source, 0).empty());
    return;
  }
  if (!GetParam().can.resumes_from_position) {
    ExpectNothingSkipped(*source, source->EncodePosition(last));
    return;
  }
  ASSERT_TRUE(source->Start(source->EncodePosition(last)).ok());
  EXPECT_TRUE(Drain(*source, 0).empty());
}

// Text the source did not write is refused, by every source: a position of another source's (a
// store shared by two, a renamed stream) must not pass for one (a broker that remembers its
// acknowledgements ignores only positions of its own form).
TEST_P(SourceConformance, RefusesAPositionThatIsNotItsOwn) {
  auto source = Open();
  const Status started = source->Start(std::string("not a position"));
  EXPECT_FALSE(started.ok());
  EXPECT_TRUE(started.code() == Code::kCorruption || started.code() == Code::kFailedPrecondition)
      << started.ToString();
}

TEST_P(SourceConformance, StopEndsTheSource) {
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  Message m;
  ASSERT_NO_FATAL_FAILURE(FetchOne(*source, m));
  source->Stop();
  EXPECT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kEnd);
}

TEST_P(SourceConformance, AnEmptySourceHasNothing) {
  messages_.clear();
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  ExpectNothingMore(*source);
}

TEST_P(SourceConformance, ANameKeysItsPosition) {
  auto source = Open();
  EXPECT_FALSE(source->name().empty());
  EXPECT_EQ(Open()->name(), source->name());  // the same source, the same key
}

// Rejected messages are delivered again after the last acknowledged one, or, by a source that
// cannot redeliver, the rejection is refused saying so (the run ends; a resumed run decides
// them again).
TEST_P(SourceConformance, ARejectionRedeliversOrIsRefusedClearly) {
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  std::vector<Message> got(3);
  for (Message& m : got) ASSERT_NO_FATAL_FAILURE(FetchOne(*source, m));
  ASSERT_TRUE(source->Acknowledge(got[0].cursor).ok());
  const Status rejected = source->Reject(got[2].cursor, 0);
  if (GetParam().can.redelivers == Redelivery::kNo) {
    EXPECT_EQ(rejected.code(), Code::kFailedPrecondition) << rejected.ToString();
    EXPECT_FALSE(rejected.message().empty());
    return;
  }
  ASSERT_TRUE(rejected.ok()) << rejected.ToString();
  // The rejected ones again, then the rest, each once; never the acknowledged first. In their
  // order, unless the backend says its broker keeps an order of its own.
  std::vector<std::string> again = Drain(*source, messages_.size() - 1);
  std::vector<std::string> expected(messages_.begin() + 1, messages_.end());
  if (GetParam().can.redelivers == Redelivery::kAnyOrder) {
    std::sort(again.begin(), again.end());
    std::sort(expected.begin(), expected.end());
  }
  EXPECT_EQ(again, expected);
}

// After every message is acknowledged, the acknowledgements are confirmed, the source has
// nothing left for the run, and it is reachable.
TEST_P(SourceConformance, AcknowledgedToTheEndItFlushesAndConfirmsIdle) {
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  Cursor last;
  ASSERT_EQ(Drain(*source, messages_.size(), &last).size(), messages_.size());
  ASSERT_TRUE(source->Acknowledge(last).ok());
  EXPECT_TRUE(source->FlushAcknowledgements(5000).ok());
  const Result<bool> idle = source->ConfirmIdle();
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  EXPECT_TRUE(*idle);
  EXPECT_FALSE(source->unreachable());
}

// What it reads from goes away mid-run: the source says so and waits (no error, no end); back,
// it delivers what was not acknowledged. A source that reads nothing remote has no outage.
TEST_P(SourceConformance, AnOutageIsReportedWaitedOutAndHealed) {
  if (!GetParam().can.reports_outages) {
    auto source = Open();
    ASSERT_TRUE(source->Start(std::nullopt).ok());
    EXPECT_FALSE(source->unreachable());
    return;
  }
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  Message m;
  ASSERT_NO_FATAL_FAILURE(FetchOne(*source, m));
  ASSERT_TRUE(source->Acknowledge(m.cursor).ok());
  ASSERT_TRUE(source->FlushAcknowledgements(5000).ok());
  GetParam().outage(false);
  bool reported = false;
  std::vector<std::string> rest;  // handed out during and after the outage, unacknowledged
  for (int i = 0; i < 40 && !reported; ++i) {  // up to ~20 s
    const Result<Source::Fetched> fetched = source->Fetch(m, kQuietMs);
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    // Messages already pulled may still be handed out; then nothing, and unreachable.
    if (*fetched == Source::Fetched::kMessage) rest.push_back(m.bytes);
    reported = *fetched == Source::Fetched::kWouldWait && source->unreachable();
  }
  GetParam().outage(true);
  EXPECT_TRUE(reported) << "the source never said its server was away";
  // Back: every message after the acknowledged first comes (those handed out already come again
  // after the ack wait), and it is reachable.
  for (std::string& again : Drain(*source, messages_.size() - 1)) rest.push_back(std::move(again));
  std::sort(rest.begin(), rest.end());
  rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
  std::vector<std::string> expected(messages_.begin() + 1, messages_.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(rest, expected);
  EXPECT_FALSE(source->unreachable());
}

INSTANTIATE_TEST_SUITE_P(Backends, SourceConformance, ::testing::ValuesIn(SourceBackends()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace evident
