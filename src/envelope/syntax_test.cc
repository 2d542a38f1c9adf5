#include "envelope/syntax.h"

#include <gtest/gtest.h>

namespace evident::syntax {
namespace {

TEST(Syntax, Rfc3339) {
  for (const char* ok : {"2026-07-31T12:00:00Z", "2024-02-29T00:00:00z", "2026-07-31t23:59:60.5Z",
                         "2026-07-31T12:00:00.123456789+05:30", "1985-04-12T23:20:50.52-00:00"}) {
    EXPECT_TRUE(IsRfc3339Timestamp(ok)) << ok;
  }
  for (const char* bad : {"", "2026-07-31", "2026-07-31T12:00:00", "2023-02-29T00:00:00Z",
                          "2026-13-01T00:00:00Z", "2026-07-31T24:00:00Z", "2026-07-31T12:00:00.Z",
                          "2026-07-31 12:00:00Z", "2026-07-31T12:00:00+0530", "26-07-31T12:00:00Z",
                          "2026-07-31T12:00:00Zjunk", "2026-07-31T12:60:00Z"}) {
    EXPECT_FALSE(IsRfc3339Timestamp(bad)) << bad;
  }
}

// A leap second exists only at 23:59:60 UTC: the same rule as the JSON Schema date-time format.
TEST(Syntax, Rfc3339LeapSecondOnlyAtTheEndOfTheUtcDay) {
  for (const char* ok : {"2016-12-31T23:59:60Z", "2016-12-31T15:59:60-08:00",
                         "2017-01-01T00:59:60+01:00", "2016-12-31T23:59:60.25z"}) {
    EXPECT_TRUE(IsRfc3339Timestamp(ok)) << ok;
  }
  for (const char* bad : {"2026-07-31T12:00:60Z", "2016-12-31T23:58:60Z", "2016-12-31T22:59:60Z",
                          "2016-12-31T23:59:60+01:00"}) {
    EXPECT_FALSE(IsRfc3339Timestamp(bad)) << bad;
  }
}

TEST(Syntax, UriReference) {
  for (const char* ok :
       {"https://example.test/order-service", "training://orders/checkout", "/relative",
        "orders-api", "urn:uuid:1234", "a%20b", "mailto:x@y.test", "http://[::1]:8080/a",
        "http://user@[2001:db8::7]/x#frag", "//[::1]", "a#b?c/d"}) {
    EXPECT_TRUE(IsUriReference(ok)) << ok;
  }
  for (const char* bad : {"has space", "a%2", "a%zz", "1http://x", "é", "tab\there", "a\"b",
                          // Brackets only around an IP-literal host; one fragment.
                          "http://x/a[b]", "http://x/a#c#d", "http://[::1", "http://[::1]x/",
                          "http://x/]#a", "[::1]", "http://x?[a]"}) {
    EXPECT_FALSE(IsUriReference(bad)) << bad;
  }
  EXPECT_TRUE(IsAbsoluteUri("https://x.test/s.json"));
  EXPECT_FALSE(IsAbsoluteUri("schemas/s.json"));
  EXPECT_FALSE(IsAbsoluteUri("/s.json"));
}

TEST(Syntax, MediaTypeBase64TraceparentExtensionName) {
  EXPECT_TRUE(IsMediaType("application/json"));
  EXPECT_TRUE(IsMediaType("application/cloudevents+json; charset=utf-8"));
  EXPECT_FALSE(IsMediaType("json"));
  EXPECT_FALSE(IsMediaType("application/"));
  EXPECT_TRUE(IsBase64(""));
  EXPECT_TRUE(IsBase64("ZXhhbXBsZQ=="));
  EXPECT_FALSE(IsBase64("ZXhhbXBsZQ="));
  EXPECT_FALSE(IsBase64("Z=hh"));
  EXPECT_TRUE(IsTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsTraceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsTraceparent("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsTraceparent("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsTraceparent("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"));
  EXPECT_FALSE(IsTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g"));
  EXPECT_FALSE(IsTraceparent("0A-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_FALSE(IsTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 "));
  EXPECT_FALSE(IsTraceparent("00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_TRUE(IsTraceparent("fe-00000000000000000000000000000001-0000000000000001-ff"));
  EXPECT_TRUE(IsExtensionName("schemaversion"));
  EXPECT_TRUE(IsExtensionName("abc123"));
  EXPECT_FALSE(IsExtensionName("Abc"));
  EXPECT_FALSE(IsExtensionName("a_b"));
  EXPECT_FALSE(IsExtensionName(""));
}

}  // namespace
}  // namespace evident::syntax
