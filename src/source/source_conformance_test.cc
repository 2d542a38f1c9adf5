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

struct SourceBackend {
  std::string name;
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
       [](const fs::path& dir, const std::vector<std::string>& messages) {
         const fs::path path = dir / "events.ndjson";
         if (!fs::exists(path)) {
           std::ofstream out(path);
           for (const std::string& m : messages) out << m << '\n';
         }
         return OpenNdjsonSource(path.string()).value();
       }},
      {"memory",
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

INSTANTIATE_TEST_SUITE_P(Backends, SourceConformance, ::testing::ValuesIn(Backends()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace evident
