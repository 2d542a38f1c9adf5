#include "serve/binding.h"

#include <gtest/gtest.h>

namespace evident::serve {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

TEST(BindingTest, StructuredBodyIsOneEventAsSent) {
  const std::string body = R"({"specversion":"1.0", "id":"a"  })";
  const BoundEvents bound = BindRequest("application/cloudevents+json; charset=UTF-8", {}, body);
  EXPECT_EQ(bound.refusal.status, 0);
  ASSERT_EQ(bound.events.size(), 1u);
  EXPECT_EQ(bound.events[0], body);
  EXPECT_EQ(BindRequest("Application/CloudEvents+JSON", {}, body).events.size(), 1u);
}

TEST(BindingTest, StructuredBodyThatIsNotJsonIsStillAnEventForThePipeline) {
  const BoundEvents bound = BindRequest("application/cloudevents+json", {}, "{\"id\":");
  EXPECT_EQ(bound.refusal.status, 0);
  ASSERT_EQ(bound.events.size(), 1u);
  EXPECT_EQ(bound.events[0], "{\"id\":");
}

TEST(BindingTest, EmptyBodiesHoldNoEvent) {
  EXPECT_EQ(BindRequest("application/cloudevents+json", {}, " \n").refusal.status, 400);
  EXPECT_EQ(BindRequest("application/cloudevents+json", {}, "").refusal.reason, "no-event");
  EXPECT_EQ(BindRequest("application/cloudevents-batch+json", {}, "").refusal.status, 400);
  const BoundEvents empty = BindRequest("application/cloudevents-batch+json", {}, " [ ] ");
  EXPECT_EQ(empty.refusal.status, 400);
  EXPECT_EQ(empty.refusal.reason, "no-event");
}

TEST(BindingTest, BatchElementsKeepTheirBytes) {
  const std::string body = "[ {\"id\" : \"a\",\n \"x\":[1, 2]} ,{\"id\":\"b\"},\"text\", 7, [1] ]";
  const BoundEvents bound = BindRequest("application/cloudevents-batch+json", {}, body);
  ASSERT_EQ(bound.refusal.status, 0) << bound.refusal.message;
  ASSERT_EQ(bound.events.size(), 5u);
  EXPECT_EQ(bound.events[0], "{\"id\" : \"a\",\n \"x\":[1, 2]}");
  EXPECT_EQ(bound.events[1], "{\"id\":\"b\"}");
  EXPECT_EQ(bound.events[2], "\"text\"");
  EXPECT_EQ(bound.events[3], "7");
  EXPECT_EQ(bound.events[4], "[1]");
  EXPECT_EQ(bound.mode, BodyMode::kBatch);
}

TEST(BindingTest, BatchThatIsNotAnArrayOfJsonIsRefusedWhole) {
  const std::string_view type = "application/cloudevents-batch+json";
  EXPECT_EQ(BindRequest(type, {}, "{\"id\":\"a\"}").refusal.reason, "batch-not-array");
  EXPECT_EQ(BindRequest(type, {}, "[{\"id\":\"a\"},{\"id\":]").refusal.reason,
            "batch-invalid-json");
  EXPECT_EQ(BindRequest(type, {}, "[{\"id\":\"a\"}] x").refusal.reason, "batch-invalid-json");
  EXPECT_EQ(BindRequest(type, {}, "[{\"id\":\"a\"}] x").refusal.status, 400);
  EXPECT_EQ(BindRequest(type, {}, "[{\"id\":\"a\"},,{\"id\":\"b\"}]").refusal.reason,
            "batch-invalid-json");
}

// An element that is no good event is still an element: the envelope decides it and keeps its
// bytes, and the elements beside it are taken.
TEST(BindingTest, ABadElementIsTakenWithItsNeighbours) {
  const std::string_view type = "application/cloudevents-batch+json";
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  const std::string body = "[{\"id\":\"a\"},{\"x\":\"\xc3\"},{\"n\":18446744073709551616}," + deep +
                           ",{\"s\":\"\\ud800\"},{\"id\":\"b\"}]";
  const BoundEvents bound = BindRequest(type, {}, body);
  ASSERT_EQ(bound.refusal.status, 0) << bound.refusal.message;
  ASSERT_EQ(bound.events.size(), 6u);
  EXPECT_EQ(bound.events[1], "{\"x\":\"\xc3\"}");
  EXPECT_EQ(bound.events[3], deep);
  EXPECT_EQ(bound.events[5], "{\"id\":\"b\"}");
}

TEST(BindingTest, BatchOverTheEventBoundIs413) {
  std::string body = "[";
  for (int i = 0; i < 11; ++i) body += (i > 0 ? ",{}" : "{}");
  body += "]";
  const BoundEvents bound =
      BindRequest("application/cloudevents-batch+json", {}, body, {.events_max = 10});
  EXPECT_EQ(bound.refusal.status, 413);
  EXPECT_EQ(bound.refusal.reason, "too-many-events");
  EXPECT_EQ(
      BindRequest("application/cloudevents-batch+json", {}, body, {.events_max = 11}).events.size(),
      11u);
}

TEST(BindingTest, BinaryModeWritesAStructuredEvent) {
  const Headers headers = {{"ce-specversion", "1.0"},
                           {"ce-id", "e%201"},
                           {"ce-source", "urn:a"},
                           {"ce-type", "t"},
                           {"ce-schemaversion", "2"},
                           {"ce-subjectversion", "x3"},
                           {"content-type", "application/json"},
                           {"x-other", "no"}};
  const BoundEvents bound = BindRequest("application/json", headers, "{\"a\":1}");
  ASSERT_EQ(bound.refusal.status, 0);
  EXPECT_EQ(bound.mode, BodyMode::kBinary);
  ASSERT_EQ(bound.events.size(), 1u);
  EXPECT_EQ(bound.events[0],
            "{\"specversion\":\"1.0\",\"id\":\"e 1\",\"source\":\"urn:a\",\"type\":\"t\","
            "\"schemaversion\":2,\"subjectversion\":\"x3\",\"datacontenttype\":"
            "\"application/json\",\"data\":{\"a\":1}}");
}

TEST(BindingTest, BinaryModeCarriesTextAsAStringAndBytesAsBase64) {
  const Headers headers = {{"ce-specversion", "1.0"}, {"ce-id", "1"}};
  EXPECT_EQ(BindRequest("text/plain", headers, "hi \"you\"").events[0],
            "{\"specversion\":\"1.0\",\"id\":\"1\",\"datacontenttype\":\"text/plain\","
            "\"data\":\"hi \\\"you\\\"\"}");
  EXPECT_EQ(BindRequest("application/octet-stream", headers, std::string("\x00\xff", 2)).events[0],
            "{\"specversion\":\"1.0\",\"id\":\"1\",\"datacontenttype\":"
            "\"application/octet-stream\",\"data_base64\":\"AP8=\"}");
  EXPECT_EQ(BindRequest("", headers, "").events[0], "{\"specversion\":\"1.0\",\"id\":\"1\"}");
}

TEST(BindingTest, ABinaryBodyThatIsNotOneJsonValueCannotAddMembers) {
  const Headers headers = {{"ce-specversion", "1.0"}, {"ce-id", "1"}};
  const BoundEvents bound =
      BindRequest("application/json", headers, R"({"a":1},"subject":"injected")");
  ASSERT_EQ(bound.events.size(), 1u);
  EXPECT_EQ(bound.events[0],
            R"({"specversion":"1.0","id":"1","datacontenttype":"application/json",)"
            R"("data":!{"a":1},"subject":"injected"})");
  EXPECT_EQ(BindRequest("", headers, R"(1,"subject":"x")").events[0],
            R"({"specversion":"1.0","id":"1","data":!1,"subject":"x"})");
}

TEST(BindingTest, HeaderValuesThatAreNotUtf8StayAsTheyCame) {
  const Headers a = {{"ce-specversion", "1.0"}, {"ce-id", "u-\xff"}};
  const Headers b = {{"ce-specversion", "1.0"}, {"ce-id", "u-%FE"}};
  EXPECT_EQ(BindRequest("", a, "").events[0], "{\"specversion\":\"1.0\",\"id\":\"u-\xff\"}");
  EXPECT_EQ(BindRequest("", b, "").events[0], "{\"specversion\":\"1.0\",\"id\":\"u-\xfe\"}");
  const Headers control = {{"ce-specversion", "1.0"}, {"ce-id", "a%00\x01\"\\"}};
  EXPECT_EQ(BindRequest("", control, "").events[0],
            "{\"specversion\":\"1.0\",\"id\":\"a\\u0000\\u0001\\\"\\\\\"}");
}

TEST(BindingTest, OtherContentIsNotACloudEvent) {
  const BoundEvents bound = BindRequest("application/json", {{"x-id", "1"}}, "{}");
  EXPECT_EQ(bound.refusal.status, 415);
  EXPECT_EQ(bound.refusal.reason, "unsupported-media-type");
  EXPECT_EQ(BindRequest("", {}, "{}").refusal.status, 415);
}

TEST(BindingTest, PercentDecodingLeavesBrokenEscapesAlone) {
  EXPECT_EQ(PercentDecode("a%20b%2"), "a b%2");
  EXPECT_EQ(PercentDecode("%zz%41"), "%zzA");
  EXPECT_EQ(PercentDecode("%C3%A9"), "\xC3\xA9");
  EXPECT_EQ(MediaType("  Text/Plain ; charset=x"), "text/plain");
}

}  // namespace
}  // namespace evident::serve
