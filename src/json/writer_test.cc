#include "json/writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace evident::json {
namespace {

TEST(Writer, WritesNestedDocument) {
  std::string out;
  Writer w(out);
  w.BeginObject().Field("a", int64_t{1}).Key("b").BeginArray().Bool(true).Null().String("x");
  w.EndArray().Field("c", "q\"\n").EndObject();
  EXPECT_EQ(out, R"({"a":1,"b":[true,null,"x"],"c":"q\"\n"})");
}

TEST(Writer, EscapesControlCharactersAndReplacesInvalidUtf8) {
  std::string out;
  AppendQuoted(out, std::string_view("\x01\xff\xc3\xa9", 4));
  EXPECT_EQ(out, "\"\\u0001\xEF\xBF\xBD\xC3\xA9\"");
  simdjson::dom::parser parser;
  EXPECT_EQ(parser.parse(out).error(), simdjson::SUCCESS);
}

TEST(Writer, OutputAlwaysParses) {
  std::string raw;
  for (int c = 0; c < 256; ++c) raw.push_back(static_cast<char>(c));
  std::string out;
  Writer(out).BeginObject().Field("all", raw).EndObject();
  simdjson::dom::parser parser;
  EXPECT_EQ(parser.parse(out).error(), simdjson::SUCCESS);
}

}  // namespace
}  // namespace evident::json
