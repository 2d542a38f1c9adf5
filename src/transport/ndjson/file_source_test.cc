// The file source (OpenNdjsonSource) beyond the conformance suite: it reads what `evident
// validate` reads (one JSON value, a batch array, NDJSON), keeps NDJSON positions as earlier
// builds wrote them, resumes inside a batch, hands over what the layout refuses as a
// rejection, and hands each event over as it completes on a pipe.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/fnv1a.h"
#include "evident/source.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-file-source-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& text, bool append = false) {
    const fs::path path = dir_ / "events.json";
    std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
    out << text;
    return path.string();
  }

  // Every message up to the end, after starting at `position`.
  static std::vector<Message> Drain(Source& source,
                                    const std::optional<std::string>& position = std::nullopt) {
    EXPECT_TRUE(source.Start(position).ok());
    std::vector<Message> out;
    while (true) {
      Message m;
      const Result<Source::Fetched> fetched = source.Fetch(m, 0);
      EXPECT_TRUE(fetched.ok()) << fetched.status().ToString();
      if (!fetched.ok() || *fetched == Source::Fetched::kEnd) break;
      if (*fetched == Source::Fetched::kMessage) out.push_back(std::move(m));
    }
    return out;
  }

  fs::path dir_;
};

TEST_F(FileSourceTest, APrettyPrintedObjectIsOneEvent) {
  const std::string text = "{\n  \"id\": \"a\",\n  \"data\": {\n    \"x\": 1\n  }\n}\n";
  auto source = OpenNdjsonSource(Write(text)).value();
  const std::vector<Message> got = Drain(*source);
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].bytes, text.substr(0, text.size() - 1));
  EXPECT_EQ(got[0].index, 0);
  EXPECT_FALSE(got[0].rejection.has_value());
  EXPECT_EQ(got[0].cursor.a, 6);  // its lines, through the last one's newline
  EXPECT_EQ(got[0].cursor.b, static_cast<int64_t>(text.size()));
}

TEST_F(FileSourceTest, ABatchArrayIsOneEventPerElement) {
  const std::string text =
      "[\n  {\"id\": \"a\"},\n  {\"id\": \"b\",\n   \"x\": [1, 2]},\n"
      "  {\"id\": \"c\"}\n]\n";
  auto source = OpenNdjsonSource(Write(text)).value();
  const std::vector<Message> got = Drain(*source);
  ASSERT_EQ(got.size(), 3U);
  EXPECT_EQ(got[0].bytes, R"({"id": "a"})");
  EXPECT_EQ(got[1].bytes, "{\"id\": \"b\",\n   \"x\": [1, 2]}");
  EXPECT_EQ(got[2].bytes, R"({"id": "c"})");
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].index, i);  // its place in the array
    EXPECT_FALSE(got[i].rejection.has_value());
  }
  // Each position ends just past the ',' or ']' after its element.
  EXPECT_EQ(text[got[0].cursor.b - 1], ',');
  EXPECT_EQ(text[got[2].cursor.b - 1], ']');
}

// The position of an NDJSON input is what earlier builds stored: a store written by one
// resumes with the next.
TEST_F(FileSourceTest, AnNdjsonPositionIsTheLinesTheirBytesAndTheirHash) {
  const std::string first = "{\"id\":\"a\"}\n\n{\"id\":\"b\"}\r\n";
  const std::string text = first + "{\"id\":\"c\"}\n";
  auto source = OpenNdjsonSource(Write(text)).value();
  const std::vector<Message> got = Drain(*source);
  ASSERT_EQ(got.size(), 3U);
  EXPECT_EQ(got[1].index, 2);  // the 0-based line it is on
  EXPECT_EQ(got[1].bytes, "{\"id\":\"b\"}");
  char expected[96];
  std::snprintf(expected, sizeof expected, "lines=3 bytes=%zu hash=%016" PRIx64, first.size(),
                Fnv1a(kFnv1aOffset, first));
  EXPECT_EQ(source->EncodePosition(got[1].cursor), expected);
  auto again = OpenNdjsonSource(Write(text)).value();
  const std::vector<Message> rest = Drain(*again, std::string(expected));
  ASSERT_EQ(rest.size(), 1U);
  EXPECT_EQ(rest[0].bytes, "{\"id\":\"c\"}");
  EXPECT_EQ(again->skipped(), 2);
}

TEST_F(FileSourceTest, AResumedRunSkipsTheElementsOfABatchOnOneLine) {
  const std::string path = Write(R"([{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"}])");
  auto source = OpenNdjsonSource(path).value();
  const std::vector<Message> got = Drain(*source);
  ASSERT_EQ(got.size(), 4U);
  const std::string position = source->EncodePosition(got[1].cursor);
  auto again = OpenNdjsonSource(path).value();
  const std::vector<Message> rest = Drain(*again, position);
  ASSERT_EQ(rest.size(), 2U);
  EXPECT_EQ(rest[0].bytes, R"({"id":"c"})");
  EXPECT_EQ(rest[0].index, 2);
  EXPECT_EQ(again->skipped(), 2);
}

// A pretty-printed event without a final newline, then more appended: the resumed run decides
// only what was appended.
TEST_F(FileSourceTest, AResumedRunContinuesAFileThatGrew) {
  auto source = OpenNdjsonSource(Write("{\n  \"id\": \"a\"\n}")).value();
  const std::vector<Message> got = Drain(*source);
  ASSERT_EQ(got.size(), 1U);
  const std::string position = source->EncodePosition(got[0].cursor);
  auto again = OpenNdjsonSource(Write("\n{\"id\":\"b\"}\n", true)).value();
  const std::vector<Message> rest = Drain(*again, position);
  ASSERT_EQ(rest.size(), 1U);
  EXPECT_EQ(rest[0].bytes, R"({"id":"b"})");
}

TEST_F(FileSourceTest, AnotherFileAtThePathIsRefusedBeforeAnyEvent) {
  const std::string path = Write(R"([{"id":"a"},{"id":"b"},{"id":"c"}])");
  auto source = OpenNdjsonSource(path).value();
  const std::vector<Message> got = Drain(*source);
  const std::string position = source->EncodePosition(got[1].cursor);
  Write(R"([{"id":"A"},{"id":"B"},{"id":"C"}])");
  auto other = OpenNdjsonSource(path).value();
  ASSERT_TRUE(other->Start(position).ok());
  Message m;
  const Result<Source::Fetched> fetched = other->Fetch(m, 0);
  ASSERT_FALSE(fetched.ok());
  EXPECT_NE(fetched.status().message().find("different input"), std::string::npos)
      << fetched.status().ToString();
}

// Over inputs larger than a read (64 KiB), so that events span reads: resuming after any event
// hands over exactly the events after it, in each layout.
TEST_F(FileSourceTest, ResumingAfterAnyEventHandsOverExactlyTheRest) {
  std::string ndjson, pretty, batch = "[\n";
  for (int i = 0; i < 1500; ++i) {
    const std::string id = std::to_string(i);
    const std::string pad(static_cast<size_t>((i * 37) % 200), 'p');
    ndjson += R"({"id":")" + id + R"(","pad":")" + pad + "\"}\n" + (i % 7 == 0 ? "\n" : "");
    pretty += "{\n  \"id\": \"" + id + "\",\n  \"pad\": [\"" + pad + "\"]\n}\n";
    batch += std::string(i > 0 ? ",\n" : "") + R"(  {"id":")" + id + R"(","pad":")" + pad + "\"}";
  }
  batch += "\n]";
  for (const std::string* text : {&ndjson, &pretty, &batch}) {
    const std::string path = Write(*text);
    ASSERT_GT(text->size(), size_t{2} << 16);
    auto source = OpenNdjsonSource(path).value();
    const std::vector<Message> all = Drain(*source);
    ASSERT_EQ(all.size(), 1500U);
    for (const size_t after :
         {size_t{0}, size_t{1}, size_t{499}, size_t{777}, size_t{1498}, size_t{1499}}) {
      auto again = OpenNdjsonSource(path).value();
      const std::vector<Message> rest = Drain(*again, source->EncodePosition(all[after].cursor));
      ASSERT_EQ(rest.size(), 1499 - after) << after;
      if (!rest.empty()) {
        EXPECT_EQ(rest.front().bytes, all[after + 1].bytes);
        EXPECT_EQ(rest.front().index, all[after + 1].index);
      }
      EXPECT_EQ(again->skipped(), static_cast<int64_t>(after + 1));
    }
  }
}

// What the layout itself refuses comes with its rejection, and the bytes that are there.
TEST_F(FileSourceTest, ABrokenBatchHandsOverItsRejections) {
  auto trailing = OpenNdjsonSource(Write(R"([{"id":"a"}] {"id":"x"})")).value();
  std::vector<Message> got = Drain(*trailing);
  ASSERT_EQ(got.size(), 2U);
  EXPECT_FALSE(got[0].rejection.has_value());
  ASSERT_TRUE(got[1].rejection.has_value());
  EXPECT_EQ(ReasonCode(got[1].rejection->reason), "malformed-json");
  EXPECT_EQ(got[1].bytes, R"({"id":"x"})");  // valid on its own, refused for where it stands

  auto unclosed = OpenNdjsonSource(Write("[{\"id\":\"a\"},\n{\"id\":\"b\"}\n")).value();
  got = Drain(*unclosed);
  ASSERT_EQ(got.size(), 2U);
  ASSERT_TRUE(got[1].rejection.has_value());
  EXPECT_EQ(ReasonCode(got[1].rejection->reason), "malformed-json");

  auto empty = OpenNdjsonSource(Write(R"([{"id":"a"},,{"id":"b"}])")).value();
  got = Drain(*empty);
  ASSERT_EQ(got.size(), 3U);
  EXPECT_TRUE(got[1].bytes.empty());
  ASSERT_TRUE(got[1].rejection.has_value());
  EXPECT_FALSE(got[2].rejection.has_value());
}

TEST_F(FileSourceTest, AnEventOverTheLimitIsRefusedAndTheNextOneRead) {
  const std::string big = "{\"id\":\"" + std::string(10000, 'x') + "\"}";
  auto source =
      OpenNdjsonSource(Write(big + "\n{\"id\":\"b\"}\n"), {.event_bytes_max = 1000}).value();
  const std::vector<Message> got = Drain(*source);
  ASSERT_EQ(got.size(), 2U);
  ASSERT_TRUE(got[0].rejection.has_value());
  EXPECT_EQ(ReasonCode(got[0].rejection->reason), "envelope-too-large");
  EXPECT_EQ(got[0].bytes.size(), 1001U);  // its first bytes, kept; the rest never held
  EXPECT_EQ(got[1].bytes, R"({"id":"b"})");
  EXPECT_EQ(got[1].index, 1);
}

// On a pipe, each event is handed over once it is complete (a pretty-printed one at the end of
// its closing line), never held back waiting for more input.
TEST_F(FileSourceTest, OnAPipeEachEventIsHandedOverAsItCompletes) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int saved = dup(0);
  ASSERT_EQ(dup2(fds[0], 0), 0);
  close(fds[0]);
  auto source = OpenNdjsonSource("-").value();
  ASSERT_TRUE(source->Start(std::nullopt).ok());
  const auto send = [&](const std::string& text) {
    ASSERT_EQ(write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  };
  Message m;
  send("{\"id\":\"a\"}\n{\n  \"id\": \"b\",\n");
  ASSERT_EQ(source->Fetch(m, 1000).value(), Source::Fetched::kMessage);
  EXPECT_EQ(m.bytes, R"({"id":"a"})");
  EXPECT_EQ(source->Fetch(m, 50).value(), Source::Fetched::kWouldWait);  // b is not complete
  send("  \"x\": 1\n}\n");
  ASSERT_EQ(source->Fetch(m, 1000).value(), Source::Fetched::kMessage);
  EXPECT_EQ(m.bytes, "{\n  \"id\": \"b\",\n  \"x\": 1\n}");
  EXPECT_EQ(m.index, 1);
  close(fds[1]);
  EXPECT_EQ(source->Fetch(m, 1000).value(), Source::Fetched::kEnd);
  source.reset();
  dup2(saved, 0);
  close(saved);
}

}  // namespace
}  // namespace evident
