// Format checks beyond what the official suite covers.
#include "schema/format.h"

#include <gtest/gtest.h>

namespace evident::schema::internal {
namespace {

TEST(Format, DateTimeAndLeapSeconds) {
  EXPECT_TRUE(CheckFormat(FormatKind::kDateTime, "2024-02-29T12:00:00Z"));
  EXPECT_FALSE(CheckFormat(FormatKind::kDateTime, "2023-02-29T12:00:00Z"));
  EXPECT_TRUE(CheckFormat(FormatKind::kDateTime, "1998-12-31T23:59:60Z"));
  EXPECT_TRUE(CheckFormat(FormatKind::kDateTime, "1998-12-31T15:59:60-08:00"));
  EXPECT_FALSE(CheckFormat(FormatKind::kDateTime, "1998-12-31T22:59:60Z"));
  EXPECT_FALSE(CheckFormat(FormatKind::kTime, "12:00:00"));  // offset required
}

// A pattern is valid when it is valid ECMA-262; RE2's own limits (repetition counts over 1000,
// a program over its memory) do not make it invalid.
TEST(Format, LongAndLargeRegexesAreValid) {
  EXPECT_TRUE(CheckFormat(FormatKind::kRegex, "^a{2000}$"));
  EXPECT_TRUE(CheckFormat(FormatKind::kRegex, "((a{100}){100}){100}"));
  std::string alternation = "^(";
  for (int i = 0; i < 20000; ++i) alternation += (i ? "|w" : "w") + std::to_string(i);
  EXPECT_TRUE(CheckFormat(FormatKind::kRegex, alternation + ")$"));
  EXPECT_FALSE(CheckFormat(FormatKind::kRegex, "(unclosed"));
  EXPECT_FALSE(CheckFormat(FormatKind::kRegex, "a{2,1}"));
}

TEST(Format, NetworkNames) {
  EXPECT_TRUE(CheckFormat(FormatKind::kIpv4, "192.168.0.1"));
  EXPECT_FALSE(CheckFormat(FormatKind::kIpv4, "192.168.0.01"));
  EXPECT_TRUE(CheckFormat(FormatKind::kIpv6, "::ffff:192.168.0.1"));
  EXPECT_FALSE(CheckFormat(FormatKind::kIpv6, "1::2::3"));
  EXPECT_TRUE(CheckFormat(FormatKind::kHostname, "xn--bcher-kva.example"));
  EXPECT_FALSE(CheckFormat(FormatKind::kHostname, "-bad.example"));
  EXPECT_TRUE(CheckFormat(FormatKind::kIdnHostname, "b\u00fccher.example"));
  EXPECT_TRUE(CheckFormat(FormatKind::kEmail, "joe.bloggs@example.com"));
  EXPECT_FALSE(CheckFormat(FormatKind::kEmail, "joe..bloggs@example.com"));
}

TEST(Format, IdentifiersAndPointers) {
  EXPECT_TRUE(CheckFormat(FormatKind::kUuid, "2eb8aa08-aa98-11ea-b4aa-73b441d16380"));
  EXPECT_FALSE(CheckFormat(FormatKind::kUuid, "2eb8aa08aa9811eab4aa73b441d16380"));
  EXPECT_TRUE(CheckFormat(FormatKind::kUri, "https://example.com/a?b#c"));
  EXPECT_FALSE(CheckFormat(FormatKind::kUri, "/relative"));
  EXPECT_TRUE(CheckFormat(FormatKind::kUriReference, "/relative"));
  EXPECT_TRUE(CheckFormat(FormatKind::kJsonPointer, "/a~1b/0"));
  EXPECT_FALSE(CheckFormat(FormatKind::kJsonPointer, "/a~2"));
  EXPECT_TRUE(CheckFormat(FormatKind::kRelativeJsonPointer, "1/a"));
  EXPECT_TRUE(CheckFormat(FormatKind::kDuration, "P1Y2M3DT4H5M6S"));
  EXPECT_FALSE(CheckFormat(FormatKind::kDuration, "P1H"));
  EXPECT_TRUE(CheckFormat(FormatKind::kRegex, "(?=lookahead is valid ECMA-262)"));
  EXPECT_FALSE(CheckFormat(FormatKind::kRegex, "^(abc]"));
}

}  // namespace
}  // namespace evident::schema::internal
