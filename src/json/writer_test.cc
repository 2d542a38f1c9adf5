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

// The plain-run scan reads eight bytes at a time: a byte that needs escaping (or is not ASCII)
// must be found at every offset of a word, and a plain run must survive whole.
TEST(Writer, EscapesSpecialBytesAtEveryOffsetOfALongString) {
  const auto reference = [](std::string_view text) {
    std::string out = "\"";
    for (const char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"') {
        out += "\\\"";
      } else if (c == '\\') {
        out += "\\\\";
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == 0x1f) {
        out += "\\u001f";
      } else {
        out.push_back(ch);  // the test only uses plain ASCII and valid 2-byte UTF-8 otherwise
      }
    }
    return out + "\"";
  };
  const std::string plain = "abcdefghijklmnopqrstuvwxyz0123456789 ~!#$%&'()*+,-./:;<=>?@[]^_`{|}";
  for (const std::string special : {"\"", "\\", "\n", "\x1f", "\xc3\xa9"}) {
    for (size_t at = 0; at <= 40; ++at) {
      std::string text = plain.substr(0, at) + special + plain.substr(at, 40 - at);
      std::string out;
      AppendQuoted(out, text);
      EXPECT_EQ(out, reference(text)) << "special byte at offset " << at;
    }
  }
  std::string out;
  AppendQuoted(out, plain);
  EXPECT_EQ(out, "\"" + plain + "\"");
}

// Commas are right at every depth, including past the 64 levels whose flags live in one word.
TEST(Writer, SeparatesMembersAtEveryDepth) {
  constexpr int kDepth = 100;
  std::string out;
  Writer w(out);
  std::string expected;
  for (int i = 0; i < kDepth; ++i) {
    w.BeginArray().Int(i);
    expected.append("[").append(std::to_string(i)).append(",");
  }
  for (int i = kDepth - 1; i >= 0; --i) {
    w.Int(i).EndArray();
    expected.append(std::to_string(i)).append(i > 0 ? "]," : "]");
  }
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace evident::json
