#include "json/pointer.h"

#include <gtest/gtest.h>

namespace evident::json {
namespace {

TEST(Pointer, EscapesTildeBeforeSlash) {
  EXPECT_EQ(EscapePointerToken("a/b~c"), "a~1b~0c");
  EXPECT_EQ(EscapePointerToken("~1"), "~01");  // not "~1": the tilde is escaped first
  std::string out = "/x";
  AppendPointerToken(out, "");
  EXPECT_EQ(out, "/x");
}

TEST(Pointer, SplitsAndUnescapes) {
  std::vector<std::string> tokens{"stale"};
  ASSERT_TRUE(SplitPointer("", tokens));
  EXPECT_TRUE(tokens.empty());
  ASSERT_TRUE(SplitPointer("/a/b~1c/~01/", tokens));
  EXPECT_EQ(tokens, (std::vector<std::string>{"a", "b/c", "~1", ""}));
  ASSERT_TRUE(SplitPointer("/", tokens));
  EXPECT_EQ(tokens, (std::vector<std::string>{""}));
}

TEST(Pointer, RejectsWhatIsNotAPointer) {
  std::vector<std::string> tokens;
  EXPECT_FALSE(SplitPointer("a/b", tokens));
  EXPECT_FALSE(SplitPointer("/a~", tokens));
  EXPECT_FALSE(SplitPointer("/a~2", tokens));
}

TEST(Pointer, TellsAPointerWithoutSplittingIt) {
  for (const std::string_view text : {"", "/", "/a/b~1c", "/~0~1", "//"}) {
    std::vector<std::string> tokens;
    EXPECT_TRUE(IsPointer(text)) << text;
    EXPECT_TRUE(SplitPointer(text, tokens)) << text;
  }
  for (const std::string_view text : {"a", "/a~", "/a~2", "~0"}) {
    std::vector<std::string> tokens;
    EXPECT_FALSE(IsPointer(text)) << text;
    EXPECT_FALSE(SplitPointer(text, tokens)) << text;
  }
}

TEST(Pointer, PercentDecodesFragments) {
  EXPECT_EQ(PercentDecode("/a%20b/%7e0%2F"), "/a b/~0/");
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");  // invalid or cut escapes stay as they are
  EXPECT_EQ(PercentDecode(""), "");
}

TEST(Pointer, RoundTrips) {
  for (const std::string token : {"plain", "", "a/b", "~", "~0~1//~~", "ü/€"}) {
    std::string pointer = "/";
    AppendPointerToken(pointer, token);
    pointer += "/x";
    std::vector<std::string> tokens;
    ASSERT_TRUE(SplitPointer(pointer, tokens)) << token;
    EXPECT_EQ(tokens, (std::vector<std::string>{token, "x"}));
  }
}

}  // namespace
}  // namespace evident::json
