#include "evident/envelope.h"

#include <gtest/gtest.h>

#include <set>

#include "envelope/syntax.h"

namespace evident {
namespace {

constexpr std::string_view kValid =
    R"({"specversion":"1.0","id":"evt-1",)"
    R"("source":"https://example.test/order-service","type":"com.example.training.order.paid",)"
    R"("subject":"order-417","time":"2026-07-31T12:00:00Z","schemaversion":1,)"
    R"("subjectversion":2,"datacontenttype":"application/json",)"
    R"("data":{"orderId":"order-417","orderVersion":2}})";

std::unique_ptr<EnvelopeParser> MakeParser(EnvelopeOptions options = {}) {
  auto parser = EnvelopeParser::Create(std::move(options));
  EXPECT_TRUE(parser.ok()) << parser.status().ToString();
  return std::move(parser).value();
}

// Replaces `from` (which must occur) in kValid with `to`.
std::string Mutate(std::string_view from, std::string_view to) {
  std::string text(kValid);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  return text;
}

TEST(Envelope, AcceptsAValidEventAndReadsEveryAttribute) {
  auto parser = MakeParser();
  const auto outcome = parser->Parse(kValid);
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  const EventView& e = outcome.event;
  EXPECT_EQ(e.id, "evt-1");
  EXPECT_EQ(e.source, "https://example.test/order-service");
  EXPECT_EQ(e.type, "com.example.training.order.paid");
  EXPECT_EQ(e.subject.value(), "order-417");
  EXPECT_EQ(e.time.value(), "2026-07-31T12:00:00Z");
  EXPECT_EQ(e.schemaversion.value(), 1);
  EXPECT_EQ(e.subjectversion.value(), 2);
  ASSERT_TRUE(e.data.has_value());
  int64_t order_version = 0;
  ASSERT_EQ(e.At("/data/orderVersion").get(order_version), simdjson::SUCCESS);
  EXPECT_EQ(order_version, 2);
}

TEST(Envelope, OriginalBytesSurviveUnchanged) {
  // Odd spacing, escapes and key order must come back byte for byte.
  const std::string input =
      "{ \"type\" :\"t\", \"id\":\"a\\u00e9\",\"specversion\":\"1.0\",\n\"source\":\"s\","
      "\"data\":{\"x\":1.50,\"y\":\"\\ud83d\\ude00\"} }";
  const std::string copy(input.data(), input.size());
  auto parser = MakeParser();
  const auto outcome = parser->Parse(input);
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  EXPECT_EQ(outcome.event.raw, copy);
  EXPECT_EQ(outcome.event.raw.data(), input.data());  // a view of the caller's bytes, no copy
  EXPECT_EQ(input, copy);
}

// Seed 000's example event, as the seed writes it (JSON instead of a JavaScript literal), with
// `from` replaced by `to`.
std::string SeedEvent(std::string_view from = "", std::string_view to = "") {
  std::string event =
      R"({"contractVersion":1,"id":"evt-104","source":"training://orders/checkout",)"
      R"("type":"order.status.changed","subject":"order-104","occurredAt":"2026-07-31T12:00:00Z",)"
      R"("data":{"schemaVersion":1,"orderId":"order-104","status":"paid"}})";
  if (from.empty()) return event;
  const size_t at = event.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) event.replace(at, from.size(), to);
  return event;
}

struct ReasonCase {
  const char* name;
  std::string input;
  EnvelopeReason reason;
  EnvelopeOptions options = {};
};

std::vector<ReasonCase> ReasonCases() {
  std::vector<ReasonCase> cases;
  EnvelopeOptions boundary;
  boundary.source_boundary = {"https://example.test/billing"};
  EnvelopeOptions require_version;
  require_version.require_schema_version = true;
  cases.push_back({"too_large",
                   std::string(kValid).insert(1, std::string(70000, ' ')),
                   EnvelopeReason::kEnvelopeTooLarge,
                   {.event_bytes_max = 65536}});
  cases.push_back({"malformed", "{\"id\":", EnvelopeReason::kMalformedJson});
  cases.push_back({"not_json", "hello, world", EnvelopeReason::kMalformedJson});
  cases.push_back({"trailing_comma", Mutate("}}", "},}"), EnvelopeReason::kMalformedJson});
  cases.push_back(
      {"invalid_utf8", Mutate("order-417\"", "order-\xff\""), EnvelopeReason::kInvalidUtf8});
  cases.push_back(
      {"overlong_utf8", Mutate("order-417\"", "order-\xc0\xaf\""), EnvelopeReason::kInvalidUtf8});
  cases.push_back({"lone_high_surrogate", Mutate("order-417\"", "order-\\ud800\""),
                   EnvelopeReason::kLoneSurrogate});
  cases.push_back({"lone_low_surrogate", Mutate("order-417\"", "order-\\udc00x\""),
                   EnvelopeReason::kLoneSurrogate});
  cases.push_back({"duplicate_top", Mutate("\"id\":\"evt-1\"", "\"id\":\"evt-1\",\"id\":\"evt-2\""),
                   EnvelopeReason::kDuplicateMember});
  cases.push_back({"duplicate_nested",
                   Mutate("\"orderVersion\":2", "\"orderVersion\":2,\"orderId\":1"),
                   EnvelopeReason::kDuplicateMember});
  cases.push_back(
      {"too_deep",
       Mutate("\"orderVersion\":2", "\"deep\":" + std::string(80, '[') + std::string(80, ']')),
       EnvelopeReason::kNestingTooDeep});
  cases.push_back({"number_past_uint64",
                   Mutate("\"orderVersion\":2", "\"orderVersion\":18446744073709551616"),
                   EnvelopeReason::kNumberOutOfRange});
  cases.push_back({"number_past_double", Mutate("\"orderVersion\":2", "\"orderVersion\":1e400"),
                   EnvelopeReason::kNumberOutOfRange});
  cases.push_back({"number_leading_zero", Mutate("\"orderVersion\":2", "\"orderVersion\":02"),
                   EnvelopeReason::kMalformedJson});
  cases.push_back({"number_bare_minus",
                   Mutate("\"orderVersion\":2", "\"orderVersion\":-,\"x\":\"1e400\""),
                   EnvelopeReason::kMalformedJson});
  cases.push_back({"control_in_id", Mutate("\"id\":\"evt-1\"", "\"id\":\"evt\\u0000-1\""),
                   EnvelopeReason::kControlCharacter});
  cases.push_back({"control_in_subject", Mutate("order-417\"", "order\\t417\""),
                   EnvelopeReason::kControlCharacter});
  cases.push_back({"c1_control_in_type", Mutate("order.paid\"", "order.paid\\u0085\""),
                   EnvelopeReason::kControlCharacter});
  cases.push_back({"control_in_extension",
                   Mutate("\"subject\"", "\"tenant\":\"a\\u001fb\",\"subject\""),
                   EnvelopeReason::kControlCharacter});
  cases.push_back({"array_element", "[1,2]", EnvelopeReason::kNotAnObject});
  cases.push_back({"scalar", "42", EnvelopeReason::kNotAnObject});
  cases.push_back({"missing_specversion", Mutate("\"specversion\":\"1.0\",", ""),
                   EnvelopeReason::kMissingSpecversion});
  cases.push_back({"missing_id", Mutate("\"id\":\"evt-1\",", ""), EnvelopeReason::kMissingId});
  cases.push_back(
      {"empty_id", Mutate("\"id\":\"evt-1\"", "\"id\":\"\""), EnvelopeReason::kMissingId});
  cases.push_back(
      {"numeric_id", Mutate("\"id\":\"evt-1\"", "\"id\":17"), EnvelopeReason::kMissingId});
  cases.push_back(
      {"null_id", Mutate("\"id\":\"evt-1\"", "\"id\":null"), EnvelopeReason::kMissingId});
  cases.push_back({"missing_source",
                   Mutate("\"source\":\"https://example.test/order-service\",", ""),
                   EnvelopeReason::kMissingSource});
  cases.push_back({"missing_type", Mutate("\"type\":\"com.example.training.order.paid\",", ""),
                   EnvelopeReason::kMissingType});
  cases.push_back(
      {"specversion_03", Mutate("\"1.0\"", "\"0.3\""), EnvelopeReason::kUnsupportedSpecversion});
  cases.push_back({"source_space", Mutate("order-service\"", "order service\""),
                   EnvelopeReason::kInvalidSource});
  cases.push_back({"subject_empty", Mutate("\"subject\":\"order-417\"", "\"subject\":\"\""),
                   EnvelopeReason::kInvalidSubject});
  cases.push_back({"subject_number", Mutate("\"subject\":\"order-417\"", "\"subject\":417"),
                   EnvelopeReason::kInvalidSubject});
  cases.push_back({"time_no_zone", Mutate("12:00:00Z", "12:00:00"), EnvelopeReason::kInvalidTime});
  cases.push_back(
      {"time_feb_30", Mutate("2026-07-31", "2026-02-30"), EnvelopeReason::kInvalidTime});
  cases.push_back({"datacontenttype", Mutate("application/json", "json"),
                   EnvelopeReason::kInvalidDatacontenttype});
  cases.push_back({"dataschema_relative",
                   Mutate("\"subject\"", "\"dataschema\":\"schemas/paid.json\",\"subject\""),
                   EnvelopeReason::kInvalidDataschema});
  cases.push_back({"data_and_base64", Mutate("\"data\":", "\"data_base64\":\"AAAA\",\"data\":"),
                   EnvelopeReason::kDataAndDataBase64});
  cases.push_back({"bad_base64",
                   Mutate(",\"data\":{\"orderId\":\"order-417\",\"orderVersion\":2}",
                          ",\"data_base64\":\"A$==\""),
                   EnvelopeReason::kInvalidDataBase64});
  cases.push_back({"extension_uppercase", Mutate("\"subject\"", "\"tenantId\":\"t1\",\"subject\""),
                   EnvelopeReason::kInvalidAttributeName});
  cases.push_back({"extension_underscore",
                   Mutate("\"subject\"", "\"tenant_id\":\"t1\",\"subject\""),
                   EnvelopeReason::kInvalidAttributeName});
  cases.push_back({"extension_object", Mutate("\"subject\"", "\"tenant\":{\"a\":1},\"subject\""),
                   EnvelopeReason::kInvalidExtensionValue});
  cases.push_back({"extension_fraction", Mutate("\"subject\"", "\"ratio\":0.5,\"subject\""),
                   EnvelopeReason::kInvalidExtensionValue});
  // Names before values, wherever each stands in the document.
  cases.push_back({"extension_value_then_name",
                   Mutate("\"subject\"", "\"ext\":{},\"Bad\":1,\"subject\""),
                   EnvelopeReason::kInvalidAttributeName});
  cases.push_back({"extension_name_then_value",
                   Mutate("\"subject\"", "\"Bad\":1,\"ext\":{},\"subject\""),
                   EnvelopeReason::kInvalidAttributeName});
  cases.push_back({"correlationid_number", Mutate("\"subject\"", "\"correlationid\":5,\"subject\""),
                   EnvelopeReason::kInvalidExtensionValue});
  cases.push_back({"schemaversion_string", Mutate("\"schemaversion\":1", "\"schemaversion\":\"1\""),
                   EnvelopeReason::kInvalidSchemaVersion});
  cases.push_back({"schemaversion_negative", Mutate("\"schemaversion\":1", "\"schemaversion\":-1"),
                   EnvelopeReason::kInvalidSchemaVersion});
  cases.push_back({"schemaversion_fraction", Mutate("\"schemaversion\":1", "\"schemaversion\":1.5"),
                   EnvelopeReason::kInvalidSchemaVersion});
  cases.push_back({"subjectversion_bool", Mutate("\"subjectversion\":2", "\"subjectversion\":true"),
                   EnvelopeReason::kInvalidSubjectVersion});
  cases.push_back({"traceparent", Mutate("\"subject\"", "\"traceparent\":\"00-abc\",\"subject\""),
                   EnvelopeReason::kInvalidTraceparent});
  cases.push_back(
      {"outside_boundary", std::string(kValid), EnvelopeReason::kSourceOutsideBoundary, boundary});
  cases.push_back({"missing_schema_version", Mutate("\"schemaversion\":1,", ""),
                   EnvelopeReason::kMissingSchemaVersion, require_version});
  EnvelopeOptions contract;
  contract.profile = Profile::Contract();
  cases.push_back({"contract_missing_subject", SeedEvent("\"subject\":\"order-104\",", ""),
                   EnvelopeReason::kMissingSubject, contract});
  cases.push_back({"contract_missing_contract_version", SeedEvent("\"contractVersion\":1,", ""),
                   EnvelopeReason::kMissingContractVersion, contract});
  cases.push_back({"contract_version_zero",
                   SeedEvent("\"contractVersion\":1", "\"contractVersion\":0"),
                   EnvelopeReason::kInvalidContractVersion, contract});
  return cases;
}

TEST(Envelope, EveryReasonCodeHasACaseAndIsReported) {
  std::set<EnvelopeReason> seen;
  for (ReasonCase& c : ReasonCases()) {
    auto parser = MakeParser(c.options);
    const auto outcome = parser->Parse(c.input);
    ASSERT_FALSE(outcome.ok()) << c.name;
    EXPECT_EQ(ReasonCode(outcome.rejection->reason), ReasonCode(c.reason))
        << c.name << ": " << outcome.rejection->message;
    EXPECT_FALSE(outcome.rejection->message.empty()) << c.name;
    EXPECT_EQ(outcome.event.raw, c.input) << c.name;
    seen.insert(c.reason);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kEnvelopeReasonCount)) << "a reason code has no test";
}

// A control character in a String attribute is refused, escaped or raw, C0 or C1; the rejection
// carries no value that holds one (a PostgreSQL text column cannot hold a NUL; the raw bytes keep
// it). Characters next to the C1 range (U+00A0, U+00E9) are no control characters.
TEST(Envelope, AControlCharacterInAStringAttributeIsRefusedAndNotCarriedOn) {
  auto parser = MakeParser();
  const std::string nul_subject = Mutate("order-417\"", "order-\\u0000417\"");
  const auto refused = parser->Parse(nul_subject);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.rejection->reason, EnvelopeReason::kControlCharacter);
  EXPECT_EQ(refused.rejection->id, "evt-1");
  EXPECT_TRUE(refused.rejection->subject.empty());
  EXPECT_NE(refused.rejection->message.find("'subject'"), std::string::npos);

  const std::string nul_id = Mutate("\"id\":\"evt-1\"", "\"id\":\"evt-\\u00001\"");
  const auto no_id = parser->Parse(nul_id);
  ASSERT_FALSE(no_id.ok());
  EXPECT_EQ(no_id.rejection->reason, EnvelopeReason::kControlCharacter);
  EXPECT_TRUE(no_id.rejection->id.empty());
  EXPECT_EQ(no_id.rejection->subject, "order-417");

  for (const char* raw : {"\x7f", "\xc2\x80", "\xc2\x9f"}) {  // raw C0 is not JSON
    const std::string input = Mutate("order-417\"", std::string("order-") + raw + "417\"");
    const auto outcome = parser->Parse(input);
    ASSERT_FALSE(outcome.ok()) << raw;
    EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kControlCharacter) << raw;
  }
  for (const char* fine : {"\xc2\xa0", "\xc3\xa9", "\\u00a0", "~"}) {
    const std::string input = Mutate("order-417\"", std::string("order-") + fine + "417\"");
    const auto outcome = parser->Parse(input);
    EXPECT_TRUE(outcome.ok()) << fine << ": " << outcome.rejection->message;
  }
}

// The eight-bytes-at-a-time filter of HasControlCharacter: a forbidden character at every
// position of strings of every length up to 40, none for the characters beside the ranges.
TEST(Envelope, AControlCharacterIsFoundAtEveryPositionOfEveryLength) {
  for (size_t length = 1; length <= 40; ++length) {
    for (size_t at = 0; at < length; ++at) {
      for (const std::string& bad : {std::string(1, '\0'), std::string("\x1f"), std::string("\x7f"),
                                     std::string("\xc2\x80"), std::string("\xc2\x9f")}) {
        std::string text(length, 'a');
        text.replace(at, 1, bad);
        EXPECT_TRUE(syntax::HasControlCharacter(text)) << length << " " << at;
      }
      for (const std::string& fine :
           {std::string(" "), std::string("\x7e"), std::string("\xc2\xa0"), std::string("\xc3\x80"),
            std::string("\xe2\x80\xae")}) {
        std::string text(length, 'a');
        text.replace(at, 1, fine);
        EXPECT_FALSE(syntax::HasControlCharacter(text)) << length << " " << at;
      }
    }
  }
}

TEST(Envelope, ReasonCodesAreStableKebabCase) {
  std::set<std::string_view> codes;
  for (EnvelopeReason reason : AllEnvelopeReasons()) {
    const std::string_view code = ReasonCode(reason);
    EXPECT_TRUE(codes.insert(code).second) << code;
    for (char c : code) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '-' || (c >= '0' && c <= '9'));
  }
  EXPECT_EQ(ReasonCode(EnvelopeReason::kMissingId), "missing-id");
  EXPECT_EQ(ReasonCode(EnvelopeReason::kSourceOutsideBoundary), "source-outside-boundary");
}

TEST(ContractProfile, AcceptsSeed000sEventAsWritten) {
  auto parser = MakeParser({.profile = Profile::Contract()});
  const std::string input = SeedEvent();
  const auto outcome = parser->Parse(input);
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  EXPECT_EQ(outcome.event.id, "evt-104");
  EXPECT_EQ(outcome.event.source, "training://orders/checkout");
  EXPECT_EQ(outcome.event.type, "order.status.changed");
  EXPECT_EQ(outcome.event.subject, "order-104");
  EXPECT_EQ(outcome.event.time, "2026-07-31T12:00:00Z");
  EXPECT_EQ(outcome.event.schemaversion, 1);
  EXPECT_EQ(outcome.event.specversion, "1.0");
  ASSERT_TRUE(outcome.event.data.has_value());
  std::string_view status;
  ASSERT_EQ(outcome.event.At("/data/status").get(status), simdjson::SUCCESS);
  EXPECT_EQ(status, "paid");
  // A string contract version is as good as a number.
  EXPECT_TRUE(
      parser->Parse(SeedEvent("\"contractVersion\":1", "\"contractVersion\":\"2026-07\"")).ok());
}

TEST(ContractProfile, EachRequiredMemberMissingIsNamed) {
  auto parser = MakeParser({.profile = Profile::Contract()});
  const std::vector<std::pair<std::string, std::string>> members = {
      {"\"id\":\"evt-104\",", "missing-id"},
      {"\"source\":\"training://orders/checkout\",", "missing-source"},
      {"\"type\":\"order.status.changed\",", "missing-type"},
      {"\"subject\":\"order-104\",", "missing-subject"},
      {"\"contractVersion\":1,", "missing-contract-version"},
      {"\"schemaVersion\":1,", "missing-schema-version"},
  };
  for (const auto& [member, reason] : members) {
    const std::string input = SeedEvent(member, "");
    const auto outcome = parser->Parse(input);
    ASSERT_FALSE(outcome.ok()) << member;
    EXPECT_EQ(ReasonCode(outcome.rejection->reason), reason) << member;
  }
  // Empty is missing, as the seed's check has it; a number where a string belongs is not.
  const auto empty = parser->Parse(SeedEvent("\"subject\":\"order-104\"", "\"subject\":\"\""));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.rejection->reason, EnvelopeReason::kMissingSubject);
  const auto empty_version =
      parser->Parse(SeedEvent("\"contractVersion\":1", "\"contractVersion\":\"\""));
  ASSERT_FALSE(empty_version.ok());
  EXPECT_EQ(empty_version.rejection->reason, EnvelopeReason::kMissingContractVersion);
  const auto numeric_subject =
      parser->Parse(SeedEvent("\"subject\":\"order-104\"", "\"subject\":104"));
  ASSERT_FALSE(numeric_subject.ok());
  EXPECT_EQ(numeric_subject.rejection->reason, EnvelopeReason::kInvalidSubject);
  for (const char* bad : {"-1", "1.5", "true", "{}", "[1]"}) {
    const auto outcome = parser->Parse(
        SeedEvent("\"contractVersion\":1", std::string("\"contractVersion\":") + bad));
    ASSERT_FALSE(outcome.ok()) << bad;
    EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kInvalidContractVersion) << bad;
  }
  // occurredAt is the time: an impossible one is invalid-time.
  const auto bad_time = parser->Parse(SeedEvent("2026-07-31T12", "2026-07-32T12"));
  ASSERT_FALSE(bad_time.ok());
  EXPECT_EQ(bad_time.rejection->reason, EnvelopeReason::kInvalidTime);
  // The seed's order: the boundary before the schema version.
  auto bounded =
      MakeParser({.source_boundary = {"training://billing/"}, .profile = Profile::Contract()});
  const auto outside = bounded->Parse(SeedEvent("\"schemaVersion\":1,", ""));
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.rejection->reason, EnvelopeReason::kSourceOutsideBoundary);
}

TEST(ContractProfile, CloudEventsKeepsAContractversionExtensionAsBefore) {
  // Only a profile that maps contractversion checks it: to CloudEvents it is an extension.
  auto parser = MakeParser();
  EXPECT_TRUE(parser->Parse(Mutate("\"subject\"", "\"contractversion\":0,\"subject\"")).ok());
}

TEST(ContractProfile, AProfileFileCanRequireAttributes) {
  auto profile = Profile::FromJson(
      R"({"name":"p","attributes":{"id":"/id","source":"/src","type":"/type","subject":"/key"},)"
      R"("constants":{"specversion":"1.0"},"required":["subject"]})");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  auto parser = MakeParser({.profile = *profile});
  EXPECT_TRUE(parser->Parse(R"({"id":"a","src":"s","type":"t","key":"k"})").ok());
  const auto outcome = parser->Parse(R"({"id":"a","src":"s","type":"t"})");
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kMissingSubject);
  auto bad = Profile::FromJson(R"({"name":"p","required":["time"]})");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(EnvelopeParser::Create({.profile = *bad}).ok());
  EXPECT_FALSE(Profile::FromJson(R"({"name":"p","required":"subject"})").ok());
  // A required contractversion needs a pointer: it is never read from a member of its name.
  auto unmapped =
      Profile::FromJson(R"({"name":"p","passthrough":true,"required":["contractversion"]})");
  ASSERT_TRUE(unmapped.ok());
  EXPECT_FALSE(EnvelopeParser::Create({.profile = *unmapped}).ok());
}

TEST(Envelope, ChecksRunInTheDocumentedOrder) {
  auto parser =
      MakeParser({.source_boundary = {"https://elsewhere.test"}, .require_schema_version = true});
  // Missing id and outside the boundary: the required-attribute check comes first.
  auto outcome = parser->Parse(Mutate("\"id\":\"evt-1\",", ""));
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kMissingId);
  // Bad specversion and bad time: specversion first.
  outcome = parser->Parse(R"({"specversion":"2.0","id":"a","source":"s","type":"t","time":"x"})");
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kUnsupportedSpecversion);
  // Bad time and outside the boundary: attribute types first.
  outcome = parser->Parse(R"({"specversion":"1.0","id":"a","source":"s","type":"t","time":"x"})");
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kInvalidTime);
  // Outside the boundary and no schema version: boundary first.
  outcome = parser->Parse(R"({"specversion":"1.0","id":"a","source":"s","type":"t"})");
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kSourceOutsideBoundary);
  EXPECT_EQ(outcome.rejection->id, "a");
  EXPECT_EQ(outcome.rejection->source, "s");
}

TEST(Envelope, AcceptsWhatCloudEventsAllows) {
  auto parser = MakeParser();
  for (const std::string& input : {
           Mutate("\"subject\"", "\"tenant\":\"t1\",\"count\":3,\"flag\":true,\"subject\""),
           Mutate("\"subject\":\"order-417\"", "\"subject\":null"),
           Mutate(",\"data\":{\"orderId\":\"order-417\",\"orderVersion\":2}",
                  ",\"data_base64\":\"\""),
           Mutate(",\"data\":{\"orderId\":\"order-417\",\"orderVersion\":2}", ",\"data\":\"text\""),
           Mutate("12:00:00Z", "12:00:00.123456+03:00"),
           Mutate("https://example.test/order-service", "/relative/source"),
           Mutate("https://example.test/order-service",
                  "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"),
           Mutate("\"subject\"",
                  "\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\","
                  "\"subject\""),
       }) {
    const auto outcome = parser->Parse(input);
    EXPECT_TRUE(outcome.ok()) << input << " -> " << outcome.rejection->message;
  }
}

TEST(Envelope, SchemaVersionFromADataPointer) {
  // Seed 000 keeps the schema version in data.schemaVersion.
  EnvelopeOptions options{
      .require_schema_version = true,
      .profile = Profile::CloudEvents().WithSchemaVersionAt("/data/schemaVersion")};
  auto parser = MakeParser(options);
  const std::string seed000 =
      R"({"specversion":"1.0","id":"evt-104","source":"training://orders/checkout",)"
      R"("type":"order.status.changed","subject":"order-104",)"
      R"("data":{"schemaVersion":2,"orderId":"order-104","status":"paid"}})";
  auto outcome = parser->Parse(seed000);
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  EXPECT_EQ(outcome.event.schemaversion.value(), 2);
  std::string no_version = seed000;
  no_version.erase(no_version.find("\"schemaVersion\":2,"), 18);
  outcome = parser->Parse(no_version);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kMissingSchemaVersion);
  EXPECT_NE(outcome.rejection->message.find("/data/schemaVersion"), std::string::npos);
}

// "/data/..." is written against the canonical envelope: under the flat layout it is read
// inside "payload".
// nesting_depth_max counts arrays and objects: 64 of them around a value pass, 65 do not.
TEST(Envelope, NestingDepthCountsContainers) {
  auto parser = MakeParser({});
  const auto wrapped = [](int containers, const std::string& inner) {
    // The event object is one level; "data" holds the rest.
    return R"({"specversion":"1.0","id":"d","source":"s","type":"t","data":)" +
           std::string(containers - 1, '[') + inner + std::string(containers - 1, ']') + "}";
  };
  for (const std::string inner : {"1", "\"x\""}) {
    const auto at_limit = parser->Parse(wrapped(64, inner));
    EXPECT_TRUE(at_limit.ok()) << at_limit.rejection->message;
    const auto over = parser->Parse(wrapped(65, inner));
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.rejection->reason, EnvelopeReason::kNestingTooDeep);
  }
  EXPECT_TRUE(parser->Parse(wrapped(64, "")).ok());
  EXPECT_FALSE(parser->Parse(wrapped(66, "")).ok());
}

TEST(Envelope, SchemaVersionAtDataFollowsTheProfilesPayload) {
  EnvelopeOptions options{.require_schema_version = true,
                          .profile = Profile::Flat().WithSchemaVersionAt("/data/schemaVersion")};
  EXPECT_EQ(options.profile.PointerFor("schemaversion"), "/payload/schemaVersion");
  auto parser = MakeParser(options);
  const auto outcome = parser->Parse(
      R"({"event.id":"f1","event.name":"n","producer.id":"p","payload":{"schemaVersion":3}})");
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  EXPECT_EQ(outcome.event.schemaversion.value(), 3);
  // Other pointers are left as written.
  EXPECT_EQ(Profile::Flat().WithSchemaVersionAt("/database/v").PointerFor("schemaversion"),
            "/database/v");
}

constexpr std::string_view kFlat =
    R"({"timestamp":"2026-07-24T12:34:56.123Z","event.id":"evt-example-1",)"
    R"("event.name":"order.approved","event.schema_version":2,"producer.id":"orders-api",)"
    R"("trace_id":"0123456789abcdef0123456789abcdef","span_id":"0123456789abcdef",)"
    R"("correlation_id":"corr-example-1","aggregate.version":7,)"
    R"("payload":{"order_id":"ord-example","approved_at":"2026-07-24T12:34:56.123Z","approval_channel":"operator"}})";

TEST(Envelope, FlatProfileReadsSeed001) {
  auto parser = MakeParser({.require_schema_version = true, .profile = Profile::Flat()});
  const auto outcome = parser->Parse(kFlat);
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  const EventView& e = outcome.event;
  EXPECT_EQ(e.specversion, "1.0");
  EXPECT_EQ(e.id, "evt-example-1");
  EXPECT_EQ(e.type, "order.approved");
  EXPECT_EQ(e.source, "orders-api");
  EXPECT_EQ(e.schemaversion.value(), 2);
  EXPECT_EQ(e.subjectversion.value(), 7);
  EXPECT_EQ(e.time.value(), "2026-07-24T12:34:56.123Z");
  EXPECT_EQ(e.correlationid.value(), "corr-example-1");
  EXPECT_EQ(e.traceparent.value(), "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01");
  std::string_view order_id;
  ASSERT_EQ(e.At("/data/order_id").get(order_id), simdjson::SUCCESS);
  EXPECT_EQ(order_id, "ord-example");
  EXPECT_EQ(e.raw, kFlat);
}

TEST(Envelope, FlatProfileRejectsWithTheSameCodes) {
  auto parser = MakeParser({.require_schema_version = true, .profile = Profile::Flat()});
  std::string no_id(kFlat);
  no_id.replace(no_id.find("\"event.id\":\"evt-example-1\","), 27, "");
  auto outcome = parser->Parse(no_id);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kMissingId);
  std::string no_version(kFlat);
  no_version.replace(no_version.find("\"event.schema_version\":2,"), 25, "");
  outcome = parser->Parse(no_version);
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kMissingSchemaVersion);
  std::string bad_trace(kFlat);
  bad_trace.replace(bad_trace.find("0123456789abcdef0123456789abcdef"), 32, "xyz");
  outcome = parser->Parse(bad_trace);
  EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kInvalidTraceparent);
  // A flat event is not a CloudEvent: read with the default profile it has no specversion.
  auto cloudevents = MakeParser();
  EXPECT_EQ(cloudevents->Parse(kFlat).rejection->reason, EnvelopeReason::kMissingSpecversion);
}

TEST(Envelope, ProfileFromJson) {
  auto profile = Profile::FromJson(
      R"({"name":"legacy","attributes":{"id":"/meta/id","source":"/meta/from","type":"/meta/kind",)"
      R"("schemaversion":"/body/v"},"constants":{"specversion":"1.0"},"data":"/body"})");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  auto parser = MakeParser({.profile = profile.value()});
  const auto outcome = parser->Parse(
      R"({"meta":{"id":"x1","from":"svc://a","kind":"k"},"body":{"v":3,"n":1},"other":{"A":1}})");
  ASSERT_TRUE(outcome.ok()) << outcome.rejection->message;
  EXPECT_EQ(outcome.event.id, "x1");
  EXPECT_EQ(outcome.event.schemaversion.value(), 3);
  EXPECT_FALSE(Profile::FromJson(R"({"name":"x","attributes":{"id":"no-slash"}})").ok());
  EXPECT_FALSE(Profile::FromJson(R"({"attributes":{}})").ok());
  EXPECT_FALSE(Profile::FromJson("[]").ok());
  EXPECT_FALSE(Profile::Named("avro").ok());
}

TEST(Envelope, OptionsAreChecked) {
  EXPECT_FALSE(EnvelopeParser::Create({.event_bytes_max = 1000}).ok());
  EXPECT_FALSE(EnvelopeParser::Create({.nesting_depth_max = 0}).ok());
  Profile bad = Profile::CloudEvents();
  bad.attribute_pointers.emplace_back("nonsense", "/x");
  EXPECT_FALSE(EnvelopeParser::Create({.profile = bad}).ok());
  // A constant for an attribute CloudEvents does not have is refused up front (it once indexed
  // past the attribute table at parse time).
  Profile bad_constant = Profile::Flat();
  bad_constant.constants.emplace_back("foo", "x");
  const auto refused = EnvelopeParser::Create({.profile = bad_constant});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'foo'"), std::string::npos);
}

TEST(Envelope, AcceptsEventsOf64KiB) {
  std::string big = Mutate("\"orderVersion\":2",
                           "\"orderVersion\":2,\"pad\":\"" + std::string(64 * 1024, 'x') + "\"");
  auto parser = MakeParser();
  EXPECT_TRUE(parser->Parse(big).ok());
}

// A member name twice in one object is found whatever the object's size (compared pairwise,
// through a filter, or sorted) and wherever the two stand; names that only look alike (same
// length, same first and middle character) are not duplicates.
TEST(Envelope, FindsADuplicateMemberInObjectsOfEverySize) {
  auto parser = MakeParser();
  for (int count = 2; count <= 40; ++count) {
    for (int second = 1; second < count; second += 3) {
      std::string data = "{";
      for (int i = 0; i < count; ++i) {
        const int name = i == second ? 0 : i;  // member `second` repeats member 0's name
        data += (i > 0 ? ",\"k" : "\"k") + std::to_string(100 + name) + "x\":" + std::to_string(i);
      }
      data += "}";
      const auto outcome =
          parser->Parse(Mutate(R"({"orderId":"order-417","orderVersion":2})",
                               R"({"orderId":"order-417","lines":[)" + data + "]}"));
      ASSERT_FALSE(outcome.ok()) << count << " members, the second k100x at " << second;
      EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kDuplicateMember);
      EXPECT_NE(outcome.rejection->message.find("'k100x'"), std::string::npos)
          << outcome.rejection->message;
    }
    std::string distinct = "{";
    for (int i = 0; i < count; ++i) {
      distinct += (i > 0 ? ",\"k" : "\"k") + std::to_string(100 + i) + "x\":" + std::to_string(i);
    }
    distinct += "}";
    EXPECT_TRUE(
        parser->Parse(Mutate(R"("orderVersion":2)", R"("orderVersion":2,"more":)" + distinct)).ok())
        << count << " distinct members";
  }
}

// The parser caches each new source's syntax and boundary verdicts: a stream that interleaves
// sources inside and outside the boundary, more of them than the cache holds, gets the same
// verdict for a source on every appearance.
TEST(Envelope, CachedSourceVerdictsHoldAcrossInterleavedSources) {
  auto parser = MakeParser({.source_boundary = {"https://example.test/order-service"}});
  const std::string inside = "https://example.test/order-service";
  std::vector<std::pair<std::string, bool>> sources;
  for (int i = 0; i < 12; ++i) {
    sources.emplace_back(inside + "/shard-" + std::to_string(i), true);
    sources.emplace_back("https://example.test/billing-" + std::to_string(i), false);
    sources.emplace_back(inside + "/" + std::to_string(i) + "/../../billing", false);
  }
  for (int round = 0; round < 3; ++round) {
    for (const auto& [source, expected_inside] : sources) {
      const auto outcome =
          parser->Parse(Mutate("\"source\":\"" + inside + "\"", "\"source\":\"" + source + "\""));
      EXPECT_EQ(outcome.ok(), expected_inside) << source << " round " << round;
      if (!expected_inside) {
        ASSERT_TRUE(outcome.rejection.has_value());
        EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kSourceOutsideBoundary) << source;
        EXPECT_EQ(outcome.rejection->source, source);
      }
    }
  }
  // Not a URI-reference: refused on every appearance, never cached as valid.
  for (int i = 0; i < 3; ++i) {
    const auto outcome =
        parser->Parse(Mutate("\"source\":\"" + inside + "\"", R"("source":"a b")"));
    ASSERT_FALSE(outcome.ok());
    EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kInvalidSource);
  }
}

// Attributes are read during the duplicate-member walk; a document refused for a repeated
// member still names no subject (nothing of it is read as an attribute), wherever the repeat is.
TEST(Envelope, ADuplicateMemberRejectionReadsNoAttributes) {
  auto parser = MakeParser();
  for (const std::string& input :
       {Mutate(R"("data":{)", R"("id":"evt-2","data":{)"),
        Mutate(R"("orderVersion":2)", R"("orderVersion":2,"orderVersion":3)"),
        Mutate(R"("specversion":"1.0",)", R"("subject":"s","subject":"t","specversion":"1.0",)")}) {
    const auto outcome = parser->Parse(input);
    ASSERT_FALSE(outcome.ok()) << input;
    EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kDuplicateMember) << input;
    EXPECT_TRUE(outcome.rejection->subject.empty()) << input;
    EXPECT_TRUE(outcome.rejection->id.empty()) << input;
    EXPECT_FALSE(outcome.event.id.size() || outcome.event.subject) << input;
  }
  // A valid event after a refused one is read whole (no attribute left from the refused one).
  const auto next = parser->Parse(kValid);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.event.id, "evt-1");
  EXPECT_EQ(*next.event.subject, "order-417");
}

// A top-level member with an empty name is an extension whose name breaks the rule (it was
// taken for "no bad member found"), whatever its value, and before a later bad member.
TEST(Envelope, AnEmptyTopLevelNameIsAnInvalidAttributeName) {
  auto parser = MakeParser();
  for (const char* member : {R"("":1,)", R"("":{"nested":[1.5]},)", R"("":"x","Q":1,)"}) {
    const auto outcome =
        parser->Parse(Mutate(R"("subject")", std::string(member) + R"("subject")"));
    ASSERT_FALSE(outcome.ok()) << member;
    EXPECT_EQ(outcome.rejection->reason, EnvelopeReason::kInvalidAttributeName) << member;
    EXPECT_NE(outcome.rejection->message.find("name ''"), std::string::npos)
        << outcome.rejection->message;
  }
  // A null member counts as absent, as for any other name.
  EXPECT_TRUE(parser->Parse(Mutate(R"("subject")", R"("":null,"subject")")).ok());
}

TEST(Boundary, MatchesAtSegmentEnds) {
  const std::vector<std::string> boundary = {"https://example.test/order-service",
                                             "training://orders/"};
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/eu", boundary));
  EXPECT_FALSE(SourceInsideBoundary("https://example.test/order-service-evil", boundary));
  EXPECT_TRUE(SourceInsideBoundary("training://orders/checkout", boundary));
  EXPECT_FALSE(SourceInsideBoundary("training://payments/x", boundary));
  EXPECT_TRUE(SourceInsideBoundary("anything", {}));
}

// A query or fragment makes another source of the same path: outside every boundary unless the
// entry itself ends in '?' or '#' (issue 40: a sibling of a signed owner took its subjects over
// as ".../order-service?x=1"). SourceUnder, what a signature covers, still counts them in.
TEST(Boundary, AQueryOrFragmentIsInsideOnlyAnEntryThatSaysSo) {
  const std::vector<std::string> boundary = {"https://example.test/order-service",
                                             "training://orders/"};
  for (const char* source :
       {"https://example.test/order-service?x=1", "https://example.test/order-service#f",
        "https://example.test/order-service/eu?x=1", "training://orders/checkout#f"}) {
    EXPECT_FALSE(SourceInsideBoundary(source, boundary)) << source;
    EXPECT_TRUE(SourceUnder(source, "https://example.test/order-service") ||
                SourceUnder(source, "training://orders/"))
        << source;
  }
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/q?tenant=1", {"https://example.test/q?"}));
  EXPECT_TRUE(SourceInsideBoundary("urn:x#part", {"urn:x#"}));
  EXPECT_FALSE(SourceInsideBoundary("urn:x#part", {"urn:x"}));
  EXPECT_TRUE(
      SourceUnder("https://example.test/order-service/evil", "https://example.test/order-service"));
  EXPECT_FALSE(
      SourceUnder("https://example.test/order-service-evil", "https://example.test/order-service"));
  EXPECT_FALSE(SourceUnder("https://example.test/order", "https://example.test/order-service"));
}

// A dot segment can lead out of the prefix a source starts with; it is never inside a boundary.
TEST(Boundary, DotSegmentsAreNeverInside) {
  const std::vector<std::string> boundary = {"https://example.test/order-service",
                                             "training://orders/"};
  for (const char* source : {
           "https://example.test/order-service/../payment-service",
           "https://example.test/order-service/..",
           "https://example.test/order-service/./x",
           "https://example.test/order-service/%2e%2E/payment-service",
           "https://example.test/order-service/.%2e/payment-service",
           "https://example.test/order-service\\..\\payment-service",
           "training://orders/../payments/x",
           "https://example.test/order-service/..?x=1",
           "https://example.test/order-service/.#fragment",
           "https://example.test/order-service/%2E",
           // An encoded separator separates for a reader that decodes before resolving.
           "https://example.test/order-service/%2e%2e%2fpayment-service",
           "https://example.test/order-service/..%2Fpayment-service",
           "https://example.test/order-service/%2e%2e%5cpayment-service",
           "https://example.test/order-service/x/..%5C..%5Cpayment-service",
       }) {
    EXPECT_FALSE(SourceInsideBoundary(source, boundary)) << source;
  }
  // Dots that are not whole segments, and dots after '?' or '#', are ordinary characters (a
  // query or fragment itself needs an entry that ends in '?' or '#').
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/v1.2/...x", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/a?next=/../b",
                                   {"https://example.test/order-service/a?"}));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/.well-known", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/%2e%2e%2e", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/a/", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/a?#..",
                                   {"https://example.test/order-service/a?"}));
  EXPECT_FALSE(SourceInsideBoundary("https://example.test/order-service/a?#..", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/a%2fb%5Cc%2", boundary));
  EXPECT_TRUE(SourceInsideBoundary("https://example.test/order-service/%2f%2f.x", boundary));
}

}  // namespace
}  // namespace evident
