#include <gtest/gtest.h>

#include "evident/envelope.h"

namespace evident {
namespace {

TEST(Split, SingleObject) {
  const SplitInput split = SplitEvents("  {\"a\":1}\n");
  EXPECT_EQ(split.layout, InputLayout::kSingle);
  ASSERT_EQ(split.slices.size(), 1u);
  EXPECT_EQ(split.slices[0].bytes, "{\"a\":1}");
}

TEST(Split, PrettyPrintedObjectIsOneEvent) {
  const SplitInput split = SplitEvents("{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n");
  EXPECT_EQ(split.layout, InputLayout::kSingle);
  EXPECT_EQ(split.slices.size(), 1u);
}

TEST(Split, BatchKeepsEachElementsBytes) {
  const std::string input =
      "[ {\"id\":\"a\",\"s\":\"x,]}\\\"\"} ,\n{\"id\":\"b\",\"n\":[1,{\"c\":2}]},3 ]";
  const SplitInput split = SplitEvents(input);
  ASSERT_EQ(split.layout, InputLayout::kBatch);
  ASSERT_EQ(split.slices.size(), 3u);
  EXPECT_EQ(split.slices[0].bytes, "{\"id\":\"a\",\"s\":\"x,]}\\\"\"}");
  EXPECT_EQ(split.slices[1].bytes, "{\"id\":\"b\",\"n\":[1,{\"c\":2}]}");
  EXPECT_EQ(split.slices[2].bytes, "3");
  EXPECT_EQ(split.slices[2].index, 2u);
}

TEST(Split, EmptyBatch) {
  const SplitInput split = SplitEvents("[]");
  EXPECT_EQ(split.layout, InputLayout::kBatch);
  EXPECT_TRUE(split.slices.empty());
}

TEST(Split, NdjsonWithBlankAndBrokenLines) {
  const SplitInput split = SplitEvents("{\"a\":1}\n\n{\"b\":\nnot json\n{\"c\":3}\n");
  EXPECT_EQ(split.layout, InputLayout::kNdjson);
  ASSERT_EQ(split.slices.size(), 4u);
  EXPECT_EQ(split.slices[0].index, 0u);
  EXPECT_EQ(split.slices[1].bytes, "{\"b\":");
  EXPECT_EQ(split.slices[1].index, 2u);
  EXPECT_EQ(split.slices[3].index, 4u);
}

TEST(Split, NdjsonWhoseFirstLineIsBroken) {
  const SplitInput split = SplitEvents("{broken\n{\"a\":1}\n");
  EXPECT_EQ(split.layout, InputLayout::kNdjson);
  EXPECT_EQ(split.slices.size(), 2u);
}

TEST(Split, TextThatIsNotJsonIsOneSlice) {
  const SplitInput split = SplitEvents("hello\nworld\nthis is not json\n");
  EXPECT_EQ(split.layout, InputLayout::kSingle);
  ASSERT_EQ(split.slices.size(), 1u);
  auto parser = EnvelopeParser::Create({}).value();
  EXPECT_EQ(parser->Parse(split.slices[0].bytes).rejection->reason, EnvelopeReason::kMalformedJson);
}

TEST(Split, BatchElementsParseToTheSameEvents) {
  const std::string input =
      R"([{"specversion":"1.0","id":"1","source":"s","type":"t"},)"
      R"({"specversion":"1.0","id":"2","source":"s","type":"t","data":{"x":[1,2]}},)"
      R"({"specversion":"1.0","source":"s","type":"t"}])";
  const SplitInput split = SplitEvents(input);
  ASSERT_EQ(split.slices.size(), 3u);
  auto parser = EnvelopeParser::Create({}).value();
  EXPECT_EQ(parser->Parse(split.slices[0].bytes).event.id, "1");
  EXPECT_EQ(parser->Parse(split.slices[1].bytes).event.id, "2");
  EXPECT_EQ(parser->Parse(split.slices[2].bytes).rejection->reason, EnvelopeReason::kMissingId);
}

}  // namespace
}  // namespace evident
