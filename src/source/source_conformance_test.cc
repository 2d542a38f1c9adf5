// The Source conformance suite: every implementation of evident/source.h passes it unchanged.
// A backend registers a factory that makes a source holding given messages (RocksDB's env test
// pattern); JetStream joins with the relay.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "evident/source.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

// What a backend claims; the suite runs every case it claims and checks the clear refusal of
// the rest.
struct SourceCapabilities {
  bool resumes_from_position = false;  // Start(EncodePosition(cursor)) continues after it
  bool redelivers = false;  // Reject: the messages after the last acknowledged come again
};

struct SourceBackend {
  std::string name;
  SourceCapabilities can;
  // A new source (a new connection) over `messages`, kept in `dir` when it needs a file; the
  // same messages and dir give the same source again.
  std::function<std::unique_ptr<Source>(const fs::path& dir,
                                        const std::vector<std::string>& messages)>
      open;
};

void PrintTo(const SourceBackend& backend, std::ostream* out) { *out << backend.name; }

std::vector<SourceBackend> Backends() {
  return {
      {"ndjson",
       {.resumes_from_position = true, .redelivers = false},
       [](const fs::path& dir, const std::vector<std::string>& messages) {
         const fs::path path = dir / "events.ndjson";
         if (!fs::exists(path)) {
           std::ofstream out(path);
           for (const std::string& m : messages) out << m << '\n';
         }
         return OpenNdjsonSource(path.string()).value();
       }},
      {"memory",
       {.resumes_from_position = true, .redelivers = true},
       [](const fs::path&, const std::vector<std::string>& messages) {
         return NewMemorySource("memory-source", messages);
       }},
  };
}

class SourceConformance : public ::testing::TestWithParam<SourceBackend> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-source-" + std::to_string(getpid()) + "-" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Source> Open() { return GetParam().open(dir_, messages_); }

  // Fetches until the end; the messages' bytes, and the last message's cursor.
  static std::vector<std::string> Drain(Source& source, Cursor* last = nullptr,
                                        std::vector<int64_t>* indexes = nullptr) {
    std::vector<std::string> out;
    Message m;
    while (true) {
      const Result<Source::Fetched> fetched = source.Fetch(m, 0);
      EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
      if (!fetched.ok() || *fetched == Source::Fetched::kEnd) break;
      if (*fetched == Source::Fetched::kWouldWait) continue;
      out.push_back(m.bytes);
      if (last != nullptr) *last = m.cursor;
      if (indexes != nullptr) indexes->push_back(m.index);
    }
    return out;
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
    EXPECT_EQ(Drain(source), messages_);
    EXPECT_EQ(source.skipped(), 0);
  }

  fs::path dir_;
  std::vector<std::string> messages_ = {R"({"id":"a"})", R"({"id":"b"})", R"({"id":"c"})",
                                        R"({"id":"d"})"};
};

TEST_P(SourceConformance, DeliversEveryMessageInOrderThenEnds) {
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  std::vector<int64_t> indexes;
  EXPECT_EQ(Drain(*source, nullptr, &indexes), messages_);
  EXPECT_TRUE(std::is_sorted(indexes.begin(), indexes.end()));
  EXPECT_EQ(std::adjacent_find(indexes.begin(), indexes.end()), indexes.end());  // distinct
  Message m;
  EXPECT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kEnd);  // and stays ended
  EXPECT_EQ(source->skipped(), 0);
}

TEST_P(SourceConformance, ResumesAfterTheEncodedPositionOfTheLastDecidedMessage) {
  Cursor after_second;
  {
    auto source = Open();
    ASSERT_TRUE(source->Start(std::nullopt).ok());
    Message m;
    ASSERT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kMessage);
    ASSERT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kMessage);
    after_second = m.cursor;
    EXPECT_TRUE(source->Acknowledge(after_second).ok());
  }
  auto source = Open();
  const std::string position = source->EncodePosition(after_second);
  if (!GetParam().can.resumes_from_position) {
    ExpectNothingSkipped(*source, position);
    return;
  }
  ASSERT_TRUE(source->Start(position).ok());
  EXPECT_EQ(Drain(*source), std::vector<std::string>(messages_.begin() + 2, messages_.end()));
  EXPECT_EQ(source->skipped(), 2);
}

TEST_P(SourceConformance, ThePositionOfTheLastMessageLeavesNothing) {
  Cursor last;
  {
    auto source = Open();
    ASSERT_TRUE(source->Start(std::nullopt).ok());
    ASSERT_EQ(Drain(*source, &last).size(), messages_.size());
  }
  auto source = Open();
  if (!GetParam().can.resumes_from_position) {
    ExpectNothingSkipped(*source, source->EncodePosition(last));
    return;
  }
  ASSERT_TRUE(source->Start(source->EncodePosition(last)).ok());
  EXPECT_TRUE(Drain(*source).empty());
}

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
  ASSERT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kMessage);
  source->Stop();
  EXPECT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kEnd);
}

TEST_P(SourceConformance, AnEmptySourceEndsAtOnce) {
  messages_.clear();
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  EXPECT_TRUE(Drain(*source).empty());
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
  for (Message& m : got) ASSERT_EQ(source->Fetch(m, 0).value(), Source::Fetched::kMessage);
  ASSERT_TRUE(source->Acknowledge(got[0].cursor).ok());
  const Status rejected = source->Reject(got[2].cursor, 0);
  if (!GetParam().can.redelivers) {
    EXPECT_EQ(rejected.code(), Code::kFailedPrecondition) << rejected.ToString();
    EXPECT_FALSE(rejected.message().empty());
    return;
  }
  ASSERT_TRUE(rejected.ok()) << rejected.ToString();
  // The rejected ones again, in order, then the rest; never the acknowledged first.
  EXPECT_EQ(Drain(*source), std::vector<std::string>(messages_.begin() + 1, messages_.end()));
}

// After every message is acknowledged, the acknowledgements are confirmed, the source has
// nothing left for the run, and it is reachable.
TEST_P(SourceConformance, AcknowledgedToTheEndItFlushesAndConfirmsIdle) {
  auto source = Open();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  Cursor last;
  ASSERT_EQ(Drain(*source, &last).size(), messages_.size());
  ASSERT_TRUE(source->Acknowledge(last).ok());
  EXPECT_TRUE(source->FlushAcknowledgements(5000).ok());
  const Result<bool> idle = source->ConfirmIdle();
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  EXPECT_TRUE(*idle);
  EXPECT_FALSE(source->unreachable());
}

INSTANTIATE_TEST_SUITE_P(Backends, SourceConformance, ::testing::ValuesIn(Backends()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace evident
