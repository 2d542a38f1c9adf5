// ECMA-262 -> RE2 translation.
#include "schema/regex.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

namespace evident::schema::internal {
namespace {

bool Search(std::string_view pattern, std::string_view text) {
  auto regex = CompileEcmaRegex(pattern, 1 << 20);
  EXPECT_TRUE(regex.ok()) << pattern << ": " << regex.status().ToString();
  return regex.ok() && RegexSearch(**regex, text);
}

TEST(EcmaRegex, ClassEscapesFollowEcmaSemantics) {
  EXPECT_TRUE(Search("^\\d+$", "0123"));
  EXPECT_FALSE(Search("^\\d$", "\u0661"));  // ARABIC-INDIC DIGIT ONE is not \d in ECMA-262
  EXPECT_FALSE(Search("^\\w$", "\u00e9"));
  EXPECT_TRUE(Search("^\\s$", "\u00a0"));  // NO-BREAK SPACE is \s in ECMA-262, not in RE2
  EXPECT_TRUE(Search("^\\s$", "\ufeff"));
  EXPECT_FALSE(Search("^\\S$", "\u2003"));
  EXPECT_TRUE(Search("^[\\s]$", "\u3000"));
}

TEST(EcmaRegex, DotExcludesAllLineTerminators) {
  EXPECT_FALSE(Search("^.$", "\n"));
  EXPECT_FALSE(Search("^.$", "\u2028"));
  EXPECT_TRUE(Search("^.$", "\u00e9"));
  EXPECT_TRUE(Search("^[^]$", "\n"));
}

TEST(EcmaRegex, UnicodeEscapesAndProperties) {
  EXPECT_TRUE(Search("^\\u00e9$", "\u00e9"));
  EXPECT_TRUE(Search("^\\u{1F600}$", "\U0001F600"));
  EXPECT_TRUE(Search("^\\uD83D\\uDE00$", "\U0001F600"));
  EXPECT_TRUE(Search("^\\p{Letter}+$", "\u00e9t\u00e9"));
  EXPECT_TRUE(Search("^\\p{L}+$", "abc"));
  EXPECT_TRUE(Search("^\\p{Script=Greek}$", "\u03b1"));
  EXPECT_TRUE(Search("^(?<year>\\d{4})$", "2024"));
}

TEST(EcmaRegex, UnsupportedConstructsAreReported) {
  for (std::string_view pattern :
       {"(?=a)", "(?!a)", "(?<=a)b", "(?<!a)b", "(a)\\1", "(?<n>a)\\k<n>"}) {
    bool unsupported = false;
    auto result = TranslateEcmaRegex(pattern, &unsupported);
    EXPECT_FALSE(result.ok()) << pattern;
    EXPECT_TRUE(unsupported) << pattern;
  }
  bool unsupported = true;
  EXPECT_FALSE(TranslateEcmaRegex("\\q", &unsupported).ok());
  EXPECT_FALSE(unsupported);
}

}  // namespace
}  // namespace evident::schema::internal
