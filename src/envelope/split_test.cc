#include <gtest/gtest.h>

#include <optional>

#include "evident/envelope.h"

namespace evident {
namespace {

// One event as the splitter handed it over, copied.
struct Got {
  std::string bytes;
  size_t index = 0;
  std::optional<EnvelopeReason> reason;  // the splitter's own rejection, if any
};

// Feeds `input` to an EventSplitter in chunks of `chunk_bytes`.
std::vector<Got> Split(std::string_view input, size_t event_bytes_max = size_t{1} << 20,
                       size_t chunk_bytes = 1 << 16) {
  std::vector<Got> got;
  const EventSplitter::Sink keep = [&](const SplitEvent& e) {
    EXPECT_LE(e.bytes.size(), event_bytes_max + 1);
    got.push_back({std::string(e.bytes), e.index,
                   e.rejection ? std::optional(e.rejection->reason) : std::nullopt});
    return Status::Ok();
  };
  EventSplitter splitter(event_bytes_max);
  for (size_t at = 0; at < input.size(); at += chunk_bytes) {
    EXPECT_TRUE(splitter.Feed(input.substr(at, chunk_bytes), keep).ok());
  }
  EXPECT_TRUE(splitter.Finish(keep).ok());
  return got;
}

// What the envelope parser says about each event: "valid", or the reason code.
std::vector<std::string> Verdicts(const std::vector<Got>& events) {
  auto parser = EnvelopeParser::Create({}).value();
  std::vector<std::string> verdicts;
  for (const Got& e : events) {
    if (e.reason) {
      verdicts.emplace_back(ReasonCode(*e.reason));
      continue;
    }
    const EnvelopeParser::Outcome outcome = parser->Parse(e.bytes);
    verdicts.emplace_back(outcome.ok() ? "valid" : ReasonCode(outcome.rejection->reason));
  }
  return verdicts;
}

std::string Event(const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id + R"(","source":"s","type":"t"})";
}

using Strings = std::vector<std::string>;

TEST(Split, EveryBadNdjsonLineIsItsOwnEvent) {
  const auto got = Split("this is\nnot json\n{\"a\":\n{\"b\":1}\n\"x\"\n");
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].bytes, "this is");
  EXPECT_EQ(got[2].bytes, "{\"a\":");  // cut short: a '{' in column 0 starts the next value
  EXPECT_EQ(got[2].index, 2u);
  EXPECT_EQ(got[4].index, 4u);
  EXPECT_EQ(Verdicts(got), (Strings{"malformed-json", "malformed-json", "malformed-json",
                                    "missing-specversion", "not-an-object"}));
}

TEST(Split, ABadFirstLineThenGoodLines) {
  const auto got = Split("{\"specversion\":\"1.0\",\"id\":\n" + Event("a") + "\n" + Event("b"));
  EXPECT_EQ(Verdicts(got), (Strings{"malformed-json", "valid", "valid"}));
  EXPECT_EQ(got[1].index, 1u);
  EXPECT_EQ(got[2].index, 2u);
}

TEST(Split, BatchWithOneMalformedElementGivesEveryElementItsResult) {
  const std::string input = "[" + Event("a") + ",\n {\"specversion\":\"1.0\",]," + Event("c") +
                            ", 7, {\"id\":\"x,]}\\\"\"}]\n";
  const auto got = Split(input);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[1].bytes, "{\"specversion\":\"1.0\",]");
  EXPECT_EQ(got[4].bytes, "{\"id\":\"x,]}\\\"\"}");
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].index, i);
  EXPECT_EQ(Verdicts(got),
            (Strings{"valid", "malformed-json", "valid", "not-an-object", "missing-specversion"}));
}

TEST(Split, BatchEdgesAreRejectedNotDropped) {
  EXPECT_TRUE(Split("  [ ]  ").empty());
  EXPECT_EQ(Verdicts(Split("[" + Event("a") + ",," + Event("b") + ",]")),
            (Strings{"valid", "malformed-json", "valid", "malformed-json"}));
  // The input ends inside the array: the last element is whole but the batch is not.
  EXPECT_EQ(Verdicts(Split("[" + Event("a") + "," + Event("b"))),
            (Strings{"valid", "malformed-json"}));
  EXPECT_EQ(Verdicts(Split("[" + Event("a") + ",")), (Strings{"valid", "malformed-json"}));
  // Content after the closing ']' is one more rejected event, even when it is an event.
  const auto after = Split("[" + Event("a") + "]\n" + Event("b") + "\n");
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[1].index, 1u);
  EXPECT_EQ(Verdicts(after), (Strings{"valid", "malformed-json"}));
}

TEST(Split, PrettyPrintedObjectIsOneEvent) {
  const std::string pretty =
      "\n{\n  \"specversion\": \"1.0\",\n  \"id\": \"p\",\n  \"source\": \"s\",\n  \"type\": \"t\","
      "\n  \"data\": {\n    \"items\": [\n      {\"n\": 1},\n      {\"n\": 2}\n    ]\n  }\n}\n\n";
  const auto got = Split(pretty);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].index, 1u);
  EXPECT_EQ(got[0].bytes.front(), '{');
  EXPECT_EQ(got[0].bytes.back(), '}');
  EXPECT_EQ(Verdicts(got), Strings{"valid"});
  // Two pretty-printed objects, one after the other, are two events.
  EXPECT_EQ(Verdicts(Split(pretty + pretty)), (Strings{"valid", "valid"}));
}

TEST(Split, CrlfAndBlankLines) {
  const auto got = Split("\r\n" + Event("a") + "\r\n\r\n  \t\r\n" + Event("b") + "\r\n");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].index, 1u);
  EXPECT_EQ(got[0].bytes, Event("a"));
  EXPECT_EQ(got[1].index, 4u);
  EXPECT_EQ(Verdicts(got), (Strings{"valid", "valid"}));
  EXPECT_TRUE(Split("\n\r\n  \n").empty());
  EXPECT_TRUE(Split("").empty());
}

// A string never spans a line: an unterminated one ends its value at the newline, and brackets
// inside it do not count.
TEST(Split, UnterminatedStringEndsAtTheLine) {
  const auto got = Split("{\"id\":\"abc[{\n" + Event("a") + "\n[\"x\n" + Event("b"));
  EXPECT_EQ(Verdicts(got), (Strings{"malformed-json", "valid", "malformed-json", "valid"}));
  const auto batch = Split("[{\"id\":\"abc[{\n}, " + Event("a") + "]");
  EXPECT_EQ(Verdicts(batch), (Strings{"malformed-json", "valid"}));
}

// A broken element never takes the elements after it along.
TEST(Split, ABatchElementWithMismatchedBracketsEndsAtItsOwnComma) {
  const std::string bad = R"({"specversion":"1.0","id":"x","source":"s","type":"t","data":[1})";
  const auto got = Split("[" + bad + ",\n" + Event("a") + ",\n" + Event("b") + "]\n");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].bytes, bad);
  EXPECT_EQ(Verdicts(got), (Strings{"malformed-json", "valid", "valid"}));
  // A closer that matches no open bracket closes one, as before.
  EXPECT_EQ(Verdicts(Split("[{\"a\":1]," + Event("a") + "]")),
            (Strings{"malformed-json", "valid"}));
}

// An element cut short of its '}' ("{"a":1,{" cannot be one object: an object wants a member
// name after a ',') ends at that ','; the elements after it are split and decided one by one.
TEST(Split, ABatchElementMissingItsClosingBraceEndsAtItsComma) {
  const std::string cut = R"({"specversion":"1.0","id":"x","source":"s","type":"t")";
  for (const char* spaces : {"", "\n", " \n  "}) {
    const std::string gap = spaces;
    const auto got = Split("[" + cut + gap + "," + gap + Event("a") + "," + gap + Event("b") + "]");
    ASSERT_EQ(got.size(), 3u) << gap.size();
    EXPECT_EQ(got[0].bytes, cut);
    EXPECT_EQ(Verdicts(got), (Strings{"malformed-json", "valid", "valid"}));
    EXPECT_EQ(got[1].index, 1u);
    EXPECT_EQ(got[2].index, 2u);
  }
  // Deeper in, ",{" may as well be a nested value missing its name: the element is not cut
  // there, and its neighbours keep their own results and indices.
  const std::string in_array =
      R"({"specversion":"1.0","id":"y","source":"s","type":"t","data":{"lines":[{"q":1,{"q":2}]}})";
  const auto kept = Split("[" + in_array + "," + Event("a") + "," + Event("b") + "]");
  EXPECT_EQ(Verdicts(kept), (Strings{"malformed-json", "valid", "valid"}));
  EXPECT_EQ(kept.at(2).index, 2u);
  const std::string unnamed =
      R"({"specversion":"1.0","id":"y","source":"s","type":"t","data":{"a":{"k":1},{"b":2}}})";
  EXPECT_EQ(Verdicts(Split("[" + unnamed + "," + Event("a") + "," + Event("b") + "]")),
            (Strings{"malformed-json", "valid", "valid"}));
  // Inside an array, ",{" is an array of objects: one element, as it is.
  const std::string array =
      R"({"specversion":"1.0","id":"z","source":"s","type":"t","data":[{},{}]})";
  EXPECT_EQ(Verdicts(Split("[" + array + "," + Event("a") + "]")), (Strings{"valid", "valid"}));
  // And a ',{' inside a string is text.
  const std::string text =
      R"({"specversion":"1.0","id":"w","source":"s","type":"t","data":"a,{b"})";
  EXPECT_EQ(Verdicts(Split("[" + text + "," + Event("a") + "]")), (Strings{"valid", "valid"}));
}

TEST(Split, ARawNewlineInsideABatchStringLosesNoElement) {
  const std::string broken = R"({"specversion":"1.0","id":"x","source":"s","type":"t","data":"ab)"
                             "\n"
                             R"(cd"})";
  // Pretty-printed and compact: the string goes on across the line and closes at its quote.
  for (const std::string& input :
       {"[\n" + broken + ",\n" + Event("a") + ",\n" + Event("b") + "\n]\n",
        "[" + broken + "," + Event("a") + "," + Event("b") + "]"}) {
    const auto got = Split(input);
    ASSERT_EQ(got.size(), 3u) << input;
    EXPECT_EQ(got[0].bytes, broken);
    EXPECT_EQ(Verdicts(got), (Strings{"malformed-json", "valid", "valid"}));
    EXPECT_EQ(got[2].index, 2u);
  }
  // A string cut short in a pretty-printed batch: the next line's '{' after a ',' is the next
  // element; a line that starts with structure ends the string.
  const auto cut = Split("[\n  {\"id\":\"a\",\"x\":\"unterminated},\n  " + Event("a") + ",\n  " +
                         Event("b") + "\n]\n");
  EXPECT_EQ(Verdicts(cut), (Strings{"malformed-json", "valid", "valid"}));
  const auto closed = Split("[\n  {\"id\":\"a\",\"x\":\"cut\n  },\n  " + Event("a") + "\n]\n");
  EXPECT_EQ(Verdicts(closed), (Strings{"malformed-json", "valid"}));
}

TEST(Split, DeeplyNestedBracketsWithinLimits) {
  const std::string deep = R"({"specversion":"1.0","id":"d","source":"s","type":"t","data":)" +
                           std::string(60, '[') + std::string(60, ']') + "}";
  EXPECT_EQ(Verdicts(Split(deep + "\n" + deep)), (Strings{"valid", "valid"}));
  EXPECT_EQ(Verdicts(Split("[" + deep + "," + deep + "]")), (Strings{"valid", "valid"}));
  const std::string too_deep = R"({"a":)" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_EQ(Verdicts(Split(too_deep + "\n" + Event("a"))), (Strings{"nesting-too-deep", "valid"}));
}

// An event past the limit is rejected with its real size, only limit + 1 bytes of it are held,
// and the events around it are split as usual, in either layout.
TEST(Split, HugeEventIsRejectedAndTheRestIsRead) {
  constexpr size_t kLimit = 1000;
  const std::string huge = R"({"specversion":"1.0","id":"h","source":"s","type":"t","data":")" +
                           std::string(5000, 'x') + R"(,]}[{"})";
  for (const std::string& input : {Event("a") + "\n" + huge + "\n" + Event("b") + "\n",
                                   "[" + Event("a") + "," + huge + "," + Event("b") + "]"}) {
    const auto got = Split(input, kLimit, 100);
    ASSERT_EQ(got.size(), 3u) << input.substr(0, 10);
    EXPECT_EQ(Verdicts(got), (Strings{"valid", "envelope-too-large", "valid"}));
    EXPECT_EQ(got[1].bytes.size(), kLimit + 1);
    EXPECT_EQ(got[2].index, 2u);
  }
  std::optional<std::string> message;
  EventSplitter splitter(kLimit);
  const EventSplitter::Sink keep = [&](const SplitEvent& e) {
    if (e.rejection) message = e.rejection->message;
    return Status::Ok();
  };
  ASSERT_TRUE(splitter.Feed(huge, keep).ok());
  ASSERT_TRUE(splitter.Finish(keep).ok());
  EXPECT_EQ(message,
            "event of " + std::to_string(huge.size()) + " bytes exceeds the limit of 1000 bytes");
}

// Where chunks begin and end changes nothing.
TEST(Split, ChunkBoundariesDoNotMatter) {
  const std::string inputs[] = {
      "this is\nnot json\n{\"a\":\n\"x\"\n" + Event("a") + "\r\n\n{\n \"b\": [1,\n 2]\n}\n",
      "[" + Event("a") + ",\n {\"x\":\"a\\\"],\"},, 7 ,\"s\"]  trailing",
      "[{\"d\":[1},\n{\"x\":\"ab\ncd\"}," + Event("a") + ",\n {\"y\":\"cut},\n {\"z\":1}]",
  };
  for (const std::string& input : inputs) {
    const auto whole = Split(input);
    for (size_t chunk = 1; chunk <= 9; ++chunk) {
      const auto chunked = Split(input, 1 << 20, chunk);
      ASSERT_EQ(chunked.size(), whole.size()) << chunk;
      for (size_t i = 0; i < whole.size(); ++i) {
        EXPECT_EQ(chunked[i].bytes, whole[i].bytes) << chunk;
        EXPECT_EQ(chunked[i].index, whole[i].index) << chunk;
        EXPECT_EQ(chunked[i].reason, whole[i].reason) << chunk;
      }
    }
  }
}

TEST(Split, SinkErrorStopsTheSplitting) {
  EventSplitter splitter;
  int calls = 0;
  const Status status =
      splitter.Feed(Event("a") + "\n" + Event("b") + "\n", [&](const SplitEvent&) {
        ++calls;
        return Status::IoError("stdout closed");
      });
  EXPECT_EQ(status.code(), Code::kIoError);
  EXPECT_EQ(calls, 1);
}

// SplitEvents: the same rule over an input held whole, slices pointing into it.
TEST(SplitEvents, LayoutsAndSlices) {
  const SplitInput single = SplitEvents("  {\"a\":1}\n");
  EXPECT_EQ(single.layout, InputLayout::kSingle);
  ASSERT_EQ(single.slices.size(), 1u);
  EXPECT_EQ(single.slices[0].bytes, "{\"a\":1}");

  const std::string input =
      "[ {\"id\":\"a\",\"s\":\"x,]}\\\"\"} ,\n{\"id\":\"b\",\"n\":[1,{\"c\":2}]},3 ]";
  const SplitInput batch = SplitEvents(input);
  ASSERT_EQ(batch.layout, InputLayout::kBatch);
  ASSERT_EQ(batch.slices.size(), 3u);
  EXPECT_EQ(batch.slices[0].bytes, "{\"id\":\"a\",\"s\":\"x,]}\\\"\"}");
  EXPECT_EQ(batch.slices[0].bytes.data(), input.data() + 2);
  EXPECT_EQ(batch.slices[1].bytes, "{\"id\":\"b\",\"n\":[1,{\"c\":2}]}");
  EXPECT_EQ(batch.slices[2].bytes, "3");
  EXPECT_EQ(batch.slices[2].index, 2u);

  EXPECT_EQ(SplitEvents("[]").layout, InputLayout::kBatch);
  EXPECT_TRUE(SplitEvents("[]").slices.empty());
  const SplitInput lines = SplitEvents("{\"a\":1}\n\n{broken\n{\"c\":3}\n");
  EXPECT_EQ(lines.layout, InputLayout::kNdjson);
  ASSERT_EQ(lines.slices.size(), 3u);
  EXPECT_EQ(lines.slices[1].bytes, "{broken");
  EXPECT_EQ(lines.slices[2].index, 3u);
  const SplitInput unclosed = SplitEvents("[{\"a\":1}");
  ASSERT_EQ(unclosed.slices.size(), 1u);
  ASSERT_TRUE(unclosed.slices[0].rejection.has_value());
  EXPECT_EQ(unclosed.slices[0].rejection->reason, EnvelopeReason::kMalformedJson);
}

}  // namespace
}  // namespace evident
