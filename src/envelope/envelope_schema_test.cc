// Tests of evident/envelope_schema.h. The schema `evident validate --print-schema` prints is
// compiled by evident's own JSON Schema validator (2020-12) and judges the same envelopes as
// EnvelopeParser, for each built-in profile: they agree wherever JSON Schema can express the
// rule, and every rule it cannot express (docs/envelope.md, "The envelope as a JSON Schema") is
// asserted as a difference, case by case. The repository's example envelopes are the vectors.
#include "evident/envelope_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/envelope.h"
#include "evident/schema.h"

namespace evident {
namespace {

// What the schema says of a case, against validate's verdict.
enum class SchemaSays {
  kAgrees,      // the same verdict as validate
  kAccepts,     // validate rejects, the schema accepts: a rule it cannot express
  kRejects,     // validate accepts, the schema rejects: it is stricter there
  kNoDocument,  // validate rejects input no JSON parser reads: the schema never sees it
};

struct Case {
  std::string name;
  std::string input;
  std::optional<EnvelopeReason> reason;  // validate's verdict: nullopt for valid
  SchemaSays schema_says = SchemaSays::kAgrees;
};

Case Valid(std::string name, std::string input) {
  return {std::move(name), std::move(input), std::nullopt};
}

Case Invalid(std::string name, std::string input, EnvelopeReason reason) {
  return {std::move(name), std::move(input), reason};
}

Case Differs(SchemaSays says, std::string name, std::string input,
             std::optional<EnvelopeReason> reason) {
  return {std::move(name), std::move(input), reason, says};
}

// The parser and the compiled schema for one set of options.
struct Judges {
  std::unique_ptr<EnvelopeParser> parser;
  std::shared_ptr<const schema::Schema> compiled;
  std::string schema_text;
  simdjson::dom::parser documents;  // reads each input for the schema
};

Judges MakeJudges(const EnvelopeOptions& options, bool format_assertion) {
  Judges judges;
  auto parser = EnvelopeParser::Create(options);
  EXPECT_TRUE(parser.ok()) << parser.status().ToString();
  if (parser.ok()) judges.parser = std::move(parser).value();
  Result<std::string> text = EnvelopeJsonSchema(options);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return judges;
  judges.schema_text = *text;
  schema::Registry registry;
  schema::CompileOptions compile_options;
  compile_options.format_assertion = format_assertion;
  auto compiled = schema::Schema::Compile(judges.schema_text, registry, compile_options);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString() << "\n" << judges.schema_text;
  if (compiled.ok()) judges.compiled = *compiled;
  return judges;
}

std::string Verdict(const std::optional<EnvelopeReason>& reason) {
  return reason.has_value() ? std::string(ReasonCode(*reason)) : "valid";
}

std::optional<EnvelopeReason> ValidateReason(EnvelopeParser& parser, const std::string& input) {
  const EnvelopeParser::Outcome outcome = parser.Parse(input);
  if (outcome.ok()) return std::nullopt;
  return outcome.rejection->reason;
}

// The schema's verdict, or nullopt when simdjson reads no document from the input.
std::optional<bool> SchemaAccepts(Judges& judges, const std::string& input, std::string& errors) {
  simdjson::dom::element document;
  if (judges.documents.parse(input).get(document) != simdjson::SUCCESS) return std::nullopt;
  const schema::Output output = judges.compiled->Validate(document);
  for (const schema::Error& error : output.errors) {
    errors += error.instance_location + " " + error.keyword_location + ": " + error.error + "\n";
  }
  return output.valid;
}

void ExpectVerdict(Judges& judges, const Case& c) {
  EXPECT_EQ(Verdict(ValidateReason(*judges.parser, c.input)), Verdict(c.reason)) << c.name;
  std::string errors;
  const std::optional<bool> accepted = SchemaAccepts(judges, c.input, errors);
  if (c.schema_says == SchemaSays::kNoDocument) {
    EXPECT_TRUE(c.reason.has_value()) << c.name;
    EXPECT_FALSE(accepted.has_value()) << c.name << ": simdjson read a document";
    return;
  }
  ASSERT_TRUE(accepted.has_value()) << c.name << ": no JSON document";
  bool expected = !c.reason.has_value();
  if (c.schema_says == SchemaSays::kAccepts) {
    EXPECT_TRUE(c.reason.has_value()) << c.name << ": a difference is something validate refuses";
    expected = true;
  } else if (c.schema_says == SchemaSays::kRejects) {
    EXPECT_FALSE(c.reason.has_value()) << c.name;
    expected = false;
  }
  EXPECT_EQ(*accepted, expected) << c.name << ": " << c.input << "\n"
                                 << errors << judges.schema_text;
}

void ExpectVerdicts(const EnvelopeOptions& options, bool format_assertion,
                    const std::vector<Case>& cases) {
  Judges judges = MakeJudges(options, format_assertion);
  ASSERT_NE(judges.parser, nullptr);
  ASSERT_NE(judges.compiled, nullptr);
  for (const Case& c : cases) ExpectVerdict(judges, c);
}

// --- CloudEvents --------------------------------------------------------------------------------

constexpr std::string_view kEvent =
    R"({"specversion":"1.0","id":"evt-1",)"
    R"("source":"https://example.test/order-service","type":"com.example.training.order.paid",)"
    R"("subject":"order-417","time":"2026-07-31T12:00:00Z","schemaversion":1,)"
    R"("subjectversion":2,"datacontenttype":"application/json",)"
    R"("data":{"orderId":"order-417","orderVersion":2}})";

// `base` with its first `from` (which must occur) replaced by `to`.
std::string Edit(std::string_view base, std::string_view from, std::string_view to) {
  std::string text(base);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string Event(std::string_view from, std::string_view to) { return Edit(kEvent, from, to); }

// kEvent with `members` ("\"a\":1,\"b\":2") added before its subject.
std::string WithMembers(std::string_view members) {
  return Event("\"subject\"", std::string(members) + ",\"subject\"");
}

constexpr std::string_view kData = R"(,"data":{"orderId":"order-417","orderVersion":2})";
constexpr std::string_view kTraceparent = "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

// kEvent with a traceparent of `version` and kTraceparent's other fields.
std::string WithTraceparent(std::string_view version) {
  return WithMembers(R"("traceparent":")" + std::string(version) + "-" + std::string(kTraceparent) +
                     "\"");
}

EnvelopeOptions CloudEventsOptions() { return {.event_bytes_max = kCloudEventsBytesMin}; }

std::vector<Case> CloudEventsValid() {
  return {
      Valid("event", std::string(kEvent)),
      Valid("extensions", WithMembers(R"("tenant":"t1","count":-3,"flag":true,)"
                                      R"("big":18446744073709551615,"traceid":"x")")),
      Valid("contractversion_is_an_extension", WithMembers(R"("contractversion":0)")),
      Valid("null_is_absent", Event(R"("subject":"order-417","time":"2026-07-31T12:00:00Z")",
                                    R"("subject":null,"time":null)")),
      Valid("bad_name_holding_null", WithMembers(R"("Bad_Name":null,"tenant":null)")),
      Valid("data_base64_empty", Event(kData, R"(,"data_base64":"")")),
      Valid("data_null_and_base64", Event(kData, R"(,"data":null,"data_base64":"AAAA")")),
      Valid("data_text", Event(kData, R"(,"data":"text")")),
      Valid("time_offset", Event("12:00:00Z", "12:00:00.123456+03:00")),
      Valid("time_lowercase", Event("T12:00:00Z", "t12:00:00z")),
      Valid("source_relative", Event("https://example.test/order-service", "/relative/source")),
      Valid("source_urn", Event("https://example.test/order-service",
                                "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66")),
      Valid("traceparent", WithTraceparent("00")),
      Valid("schemaversion_whole_double", Event(R"("schemaversion":1)", R"("schemaversion":3.0)")),
      Valid("media_type_parameters", Event("application/json", "application/json; charset=utf-8")),
      Valid("dataschema", WithMembers(R"("dataschema":"https://example.test/schemas/paid.json")")),
      Valid("correlation", WithMembers(R"("correlationid":"c-1","causationid":"evt-0")")),
  };
}

std::vector<Case> CloudEventsRequiredAndTypes() {
  using R = EnvelopeReason;
  return {
      Invalid("array", "[1,2]", R::kNotAnObject),
      Invalid("scalar", "42", R::kNotAnObject),
      Invalid("no_specversion", Event(R"("specversion":"1.0",)", ""), R::kMissingSpecversion),
      Invalid("null_specversion", Event(R"("1.0")", "null"), R::kMissingSpecversion),
      Invalid("numeric_specversion", Event(R"("1.0")", "1.0"), R::kMissingSpecversion),
      Invalid("no_id", Event(R"("id":"evt-1",)", ""), R::kMissingId),
      Invalid("empty_id", Event(R"("id":"evt-1")", R"("id":"")"), R::kMissingId),
      Invalid("numeric_id", Event(R"("id":"evt-1")", R"("id":17)"), R::kMissingId),
      Invalid("null_id", Event(R"("id":"evt-1")", R"("id":null)"), R::kMissingId),
      Invalid("no_source", Event(R"("source":"https://example.test/order-service",)", ""),
              R::kMissingSource),
      Invalid("no_type", Event(R"("type":"com.example.training.order.paid",)", ""),
              R::kMissingType),
      Invalid("specversion_03", Event(R"("1.0")", R"("0.3")"), R::kUnsupportedSpecversion),
      Invalid("source_space", Event("order-service\"", "order service\""), R::kInvalidSource),
      Invalid("subject_empty", Event(R"("subject":"order-417")", R"("subject":"")"),
              R::kInvalidSubject),
      Invalid("subject_number", Event(R"("subject":"order-417")", R"("subject":417)"),
              R::kInvalidSubject),
      Invalid("time_no_zone", Event("12:00:00Z", "12:00:00"), R::kInvalidTime),
      Invalid("time_number", Event(R"("2026-07-31T12:00:00Z")", "5"), R::kInvalidTime),
      Invalid("media_type", Event("application/json", "json"), R::kInvalidDatacontenttype),
      Invalid("dataschema_relative", WithMembers(R"("dataschema":"schemas/paid.json")"),
              R::kInvalidDataschema),
      Invalid("data_and_base64", Event(kData, R"(,"data":{},"data_base64":"AAAA")"),
              R::kDataAndDataBase64),
      Invalid("base64_character", Event(kData, R"(,"data_base64":"A$==")"), R::kInvalidDataBase64),
      Invalid("base64_length", Event(kData, R"(,"data_base64":"AAA")"), R::kInvalidDataBase64),
      Invalid("base64_number", Event(kData, R"(,"data_base64":5)"), R::kInvalidDataBase64),
  };
}

std::vector<Case> CloudEventsExtensionsAndVersions() {
  using R = EnvelopeReason;
  const std::string zero_trace =
      R"("traceparent":"00-00000000000000000000000000000000-b7ad6b7169203331-01")";
  return {
      Invalid("name_uppercase", WithMembers(R"("tenantId":"t1")"), R::kInvalidAttributeName),
      Invalid("name_underscore", WithMembers(R"("tenant_id":"t1")"), R::kInvalidAttributeName),
      Invalid("name_empty", WithMembers(R"("":1)"), R::kInvalidAttributeName),
      Invalid("value_object", WithMembers(R"("tenant":{"a":1})"), R::kInvalidExtensionValue),
      Invalid("value_array", WithMembers(R"("tenant":[1])"), R::kInvalidExtensionValue),
      Invalid("value_fraction", WithMembers(R"("ratio":0.5)"), R::kInvalidExtensionValue),
      Invalid("correlationid_number", WithMembers(R"("correlationid":5)"),
              R::kInvalidExtensionValue),
      Invalid("causationid_empty", WithMembers(R"("causationid":"")"), R::kInvalidExtensionValue),
      Invalid("schemaversion_string", Event(R"("schemaversion":1)", R"("schemaversion":"1")"),
              R::kInvalidSchemaVersion),
      Invalid("schemaversion_negative", Event(R"("schemaversion":1)", R"("schemaversion":-1)"),
              R::kInvalidSchemaVersion),
      Invalid("schemaversion_fraction", Event(R"("schemaversion":1)", R"("schemaversion":1.5)"),
              R::kInvalidSchemaVersion),
      Invalid("subjectversion_bool", Event(R"("subjectversion":2)", R"("subjectversion":true)"),
              R::kInvalidSubjectVersion),
      Invalid("traceparent_short", WithMembers(R"("traceparent":"00-abc")"),
              R::kInvalidTraceparent),
      Invalid("traceparent_zero_trace", WithMembers(zero_trace), R::kInvalidTraceparent),
      Invalid("traceparent_version_ff", WithTraceparent("ff"), R::kInvalidTraceparent),
      Invalid("traceparent_uppercase", WithTraceparent("0A"), R::kInvalidTraceparent),
      Invalid("control_in_id", Event(R"("id":"evt-1")", R"("id":"evt\u0000-1")"),
              R::kControlCharacter),
      Invalid("control_in_specversion", Event(R"("1.0")", R"("1.0\u0007")"), R::kControlCharacter),
      Invalid("control_in_subject", Event("order-417\"", "order\\t417\""), R::kControlCharacter),
      Invalid("c1_control_in_type", Event("order.paid\"", "order.paid\\u0085\""),
              R::kControlCharacter),
      Invalid("control_in_extension", WithMembers(R"("tenant":"a\u001fb")"), R::kControlCharacter),
      Invalid("control_in_correlationid", WithMembers(R"("correlationid":"a\u007f")"),
              R::kControlCharacter),
  };
}

// Rules that a "format" decides: the schema agrees with validate where the validator asserts
// format, and accepts (or, for a URI authority, stops refusing) where format is an annotation.
std::vector<Case> CloudEventsFormatCases() {
  using R = EnvelopeReason;
  return {
      Invalid("time_february_30", Event("2026-07-31", "2026-02-30"), R::kInvalidTime),
      Invalid("time_hour_24", Event("T12:00:00Z", "T24:00:00Z"), R::kInvalidTime),
      Invalid("time_leap_second_at_noon", Event("T12:00:00Z", "T12:00:60Z"), R::kInvalidTime),
      Invalid("source_scheme_digit", Event("https://example.test/order-service", "1http://x"),
              R::kInvalidSource),
      Invalid("source_two_fragments",
              Event("https://example.test/order-service", "https://a.test/x#y#z"),
              R::kInvalidSource),
      Invalid("dataschema_two_fragments", WithMembers(R"("dataschema":"https://a.test/s#a#b")"),
              R::kInvalidDataschema),
      // evident's uri-reference format wants a port of digits; validate's source check does not.
      Differs(SchemaSays::kRejects, "source_port_not_digits",
              Event("https://example.test/order-service", "https://example.test:port/x"),
              std::nullopt),
  };
}

// The same cases, judged by a validator that takes format as an annotation only.
std::vector<Case> WithoutFormatAssertion(std::vector<Case> cases) {
  for (Case& c : cases) {
    if (c.schema_says == SchemaSays::kRejects) {
      c.schema_says = SchemaSays::kAgrees;
    } else if (c.reason.has_value()) {
      c.schema_says = SchemaSays::kAccepts;
    }
  }
  return cases;
}

// What JSON Schema cannot express (docs/envelope.md lists each).
std::vector<Case> CloudEventsDifferences() {
  using R = EnvelopeReason;
  const SchemaSays accepts = SchemaSays::kAccepts, none = SchemaSays::kNoDocument;
  return {
      Differs(accepts, "too_large", std::string(kEvent).insert(1, std::string(70000, ' ')),
              R::kEnvelopeTooLarge),
      Differs(none, "malformed", "{\"id\":", R::kMalformedJson),
      Differs(none, "invalid_utf8", Event("order-417\"", "order-\xff\""), R::kInvalidUtf8),
      Differs(none, "lone_surrogate", Event("order-417\"", "order-\\ud800\""), R::kLoneSurrogate),
      Differs(none, "number_past_uint64",
              Event("\"orderVersion\":2", "\"orderVersion\":18446744073709551616"),
              R::kNumberOutOfRange),
      Differs(none, "number_past_double", Event("\"orderVersion\":2", "\"orderVersion\":1e400"),
              R::kNumberOutOfRange),
      Differs(accepts, "duplicate_member", Event(R"("id":"evt-1")", R"("id":"evt-1","id":"evt-2")"),
              R::kDuplicateMember),
      Differs(
          accepts, "too_deep",
          Event("\"orderVersion\":2", "\"deep\":" + std::string(80, '[') + std::string(80, ']')),
          R::kNestingTooDeep),
      Differs(accepts, "extension_whole_fraction", WithMembers(R"("count":3.0)"),
              R::kInvalidExtensionValue),
      Differs(accepts, "extension_exponent", WithMembers(R"("count":1e2)"),
              R::kInvalidExtensionValue),
      Differs(accepts, "version_past_int64",
              Event(R"("schemaversion":1)", R"("schemaversion":9223372036854775808)"),
              R::kInvalidSchemaVersion),
      Differs(accepts, "version_exponent_past_9e15",
              Event(R"("schemaversion":1)", R"("schemaversion":1e16)"), R::kInvalidSchemaVersion),
  };
}

EnvelopeOptions BoundaryOptions() {
  return {.event_bytes_max = kCloudEventsBytesMin,
          .source_boundary = {"https://example.test/billing"}};
}

std::vector<Case> BoundaryDifference() {
  return {Differs(SchemaSays::kAccepts, "outside_boundary", std::string(kEvent),
                  EnvelopeReason::kSourceOutsideBoundary)};
}

TEST(EnvelopeSchema, CloudEventsAgreesWithValidateWithOrWithoutFormat) {
  for (const bool format_assertion : {true, false}) {
    SCOPED_TRACE(format_assertion ? "format asserted" : "format an annotation");
    ExpectVerdicts(CloudEventsOptions(), format_assertion, CloudEventsValid());
    ExpectVerdicts(CloudEventsOptions(), format_assertion, CloudEventsRequiredAndTypes());
    ExpectVerdicts(CloudEventsOptions(), format_assertion, CloudEventsExtensionsAndVersions());
  }
}

TEST(EnvelopeSchema, FormatsDecideCalendarAndUriStructureOnlyWhereAsserted) {
  ExpectVerdicts(CloudEventsOptions(), true, CloudEventsFormatCases());
  ExpectVerdicts(CloudEventsOptions(), false, WithoutFormatAssertion(CloudEventsFormatCases()));
}

TEST(EnvelopeSchema, WhatJsonSchemaCannotExpressIsRefusedByValidateAlone) {
  ExpectVerdicts(CloudEventsOptions(), true, CloudEventsDifferences());
  // A boundary is a consumer's, not the envelope's: the schema has none.
  ExpectVerdicts(BoundaryOptions(), true, BoundaryDifference());
}

// --- the schema version at a pointer, required -------------------------------------------------

EnvelopeOptions SchemaVersionAtOptions() {
  return {.require_schema_version = true,
          .profile = Profile::CloudEvents().WithSchemaVersionAt("/data/schemaVersion")};
}

std::vector<Case> SchemaVersionAtCases() {
  using R = EnvelopeReason;
  const std::string base =
      R"({"specversion":"1.0","id":"evt-104","source":"training://orders/checkout",)"
      R"("type":"order.status.changed","subject":"order-104",)"
      R"("data":{"schemaVersion":2,"orderId":"order-104"}})";
  return {
      Valid("version_in_data", base),
      // The top-level member is not read where a pointer names the schema version.
      Valid("top_level_ignored", Edit(base, R"("subject")", R"("schemaversion":"x","subject")")),
      Invalid("no_version", Edit(base, R"("schemaVersion":2,)", ""), R::kMissingSchemaVersion),
      Invalid("null_version", Edit(base, R"("schemaVersion":2)", R"("schemaVersion":null)"),
              R::kMissingSchemaVersion),
      Invalid("data_text", Edit(base, R"({"schemaVersion":2,"orderId":"order-104"})", "\"t\""),
              R::kMissingSchemaVersion),
      Invalid("negative_version", Edit(base, R"("schemaVersion":2)", R"("schemaVersion":-1)"),
              R::kInvalidSchemaVersion),
  };
}

TEST(EnvelopeSchema, SchemaVersionAtAPointerAndRequiredAgrees) {
  ExpectVerdicts(SchemaVersionAtOptions(), true, SchemaVersionAtCases());
}

// --- the flat profile (seed 001) ---------------------------------------------------------------

constexpr std::string_view kFlat =
    R"({"timestamp":"2026-07-24T12:34:56.123Z","event.id":"evt-example-1",)"
    R"("event.name":"order.approved","event.schema_version":2,"producer.id":"orders-api",)"
    R"("trace_id":"0123456789abcdef0123456789abcdef","span_id":"0123456789abcdef",)"
    R"("correlation_id":"corr-example-1","aggregate.version":7,)"
    R"("payload":{"order_id":"ord-example","approval_channel":"operator"}})";

std::string Flat(std::string_view from, std::string_view to) { return Edit(kFlat, from, to); }

EnvelopeOptions FlatOptions() {
  return {.require_schema_version = true, .profile = Profile::Flat()};
}

std::vector<Case> FlatValid() {
  const std::string trace = R"("trace_id":"0123456789abcdef0123456789abcdef")";
  const std::string span = R"("span_id":"0123456789abcdef")";
  return {
      Valid("seed_001", std::string(kFlat)),
      // The span id is read only with a trace id.
      Valid("no_trace_any_span", Flat(trace + "," + span, R"("span_id":"zz")")),
      Valid("null_trace_any_span", Flat(trace + "," + span, R"("trace_id":null,"span_id":5)")),
      Valid("empty_span", Flat(span, R"("span_id":"")")),
      Valid("null_span", Flat(span, R"("span_id":null)")),
      // A flat event's other members are not read: no specversion, no extensions.
      Valid("unread_members", Flat(R"("timestamp")", R"("specversion":"0.3","Other_Thing":[1],)"
                                                     R"("timestamp")")),
  };
}

std::vector<Case> FlatInvalid() {
  using R = EnvelopeReason;
  return {
      Invalid("no_id", Flat(R"("event.id":"evt-example-1",)", ""), R::kMissingId),
      Invalid("empty_id", Flat(R"("evt-example-1")", R"("")"), R::kMissingId),
      Invalid("no_source", Flat(R"("producer.id":"orders-api",)", ""), R::kMissingSource),
      Invalid("no_type", Flat(R"("event.name":"order.approved",)", ""), R::kMissingType),
      Invalid("source_space", Flat("orders-api", "orders api"), R::kInvalidSource),
      Invalid("subject_empty", Flat(R"("timestamp")", R"("aggregate.id":"","timestamp")"),
              R::kInvalidSubject),
      Invalid("no_version", Flat(R"("event.schema_version":2,)", ""), R::kMissingSchemaVersion),
      Invalid("version_string",
              Flat(R"("event.schema_version":2)", R"("event.schema_version":"2")"),
              R::kInvalidSchemaVersion),
      Invalid("aggregate_version_negative",
              Flat(R"("aggregate.version":7)", R"("aggregate.version":-7)"),
              R::kInvalidSubjectVersion),
      Invalid("timestamp", Flat("2026-07-24T12:34:56.123Z", "yesterday"), R::kInvalidTime),
      Invalid("correlation_number", Flat(R"("corr-example-1")", "5"), R::kInvalidExtensionValue),
      Invalid("correlation_control", Flat(R"("corr-example-1")", R"("corr\u0001")"),
              R::kControlCharacter),
      Invalid("trace_short", Flat("0123456789abcdef0123456789abcdef", "xyz"),
              R::kInvalidTraceparent),
      Invalid("trace_uppercase",
              Flat("0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789abcdef"),
              R::kInvalidTraceparent),
      Invalid("trace_zero", Flat("0123456789abcdef0123456789abcdef", std::string(32, '0')),
              R::kInvalidTraceparent),
      Invalid("trace_number", Flat(R"("0123456789abcdef0123456789abcdef")", "5"),
              R::kInvalidTraceparent),
      Invalid("span_zero",
              Flat(R"("span_id":"0123456789abcdef")", R"("span_id":"0000000000000000")"),
              R::kInvalidTraceparent),
      Invalid("span_number", Flat(R"("span_id":"0123456789abcdef")", R"("span_id":7)"),
              R::kInvalidTraceparent),
      Invalid("array", "[]", R::kNotAnObject),
  };
}

TEST(EnvelopeSchema, FlatProfileAgreesWithValidate) {
  ExpectVerdicts(FlatOptions(), true, FlatValid());
  ExpectVerdicts(FlatOptions(), true, FlatInvalid());
}

// --- the contract profile (seed 000) -----------------------------------------------------------

constexpr std::string_view kSeed000 =
    R"({"contractVersion":1,"id":"evt-104","source":"training://orders/checkout",)"
    R"("type":"order.status.changed","subject":"order-104","occurredAt":"2026-07-31T12:00:00Z",)"
    R"("data":{"schemaVersion":1,"orderId":"order-104","status":"paid"}})";

std::string Seed(std::string_view from, std::string_view to) { return Edit(kSeed000, from, to); }

std::vector<Case> ContractCases() {
  using R = EnvelopeReason;
  const std::string version = R"("contractVersion":1)";
  return {
      Valid("seed_000", std::string(kSeed000)),
      Valid("version_string", Seed(version, R"("contractVersion":"v2")")),
      Valid("version_whole_double", Seed(version, R"("contractVersion":2.0)")),
      Valid("unread_members",
            Seed(version, version + R"(,"Extra_Member":{"a":1},"specversion":"0.3")")),
      Invalid("no_id", Seed(R"("id":"evt-104",)", ""), R::kMissingId),
      Invalid("no_subject", Seed(R"("subject":"order-104",)", ""), R::kMissingSubject),
      Invalid("empty_subject", Seed(R"("order-104",)", R"("",)"), R::kMissingSubject),
      Invalid("null_subject", Seed(R"("order-104",)", "null,"), R::kMissingSubject),
      Invalid("numeric_subject", Seed(R"("order-104",)", "104,"), R::kInvalidSubject),
      Invalid("subject_control", Seed(R"("order-104",)", R"("order\n104",)"), R::kControlCharacter),
      Invalid("no_contract_version", Seed(version + ",", ""), R::kMissingContractVersion),
      Invalid("empty_contract_version", Seed(version, R"("contractVersion":"")"),
              R::kMissingContractVersion),
      Invalid("contract_version_zero", Seed(version, R"("contractVersion":0)"),
              R::kInvalidContractVersion),
      Invalid("contract_version_fraction", Seed(version, R"("contractVersion":1.5)"),
              R::kInvalidContractVersion),
      Invalid("contract_version_bool", Seed(version, R"("contractVersion":true)"),
              R::kInvalidContractVersion),
      Invalid("no_schema_version", Seed(R"("schemaVersion":1,)", ""), R::kMissingSchemaVersion),
      Invalid("data_text",
              Seed(R"({"schemaVersion":1,"orderId":"order-104","status":"paid"})", "\"paid\""),
              R::kMissingSchemaVersion),
      Invalid("schema_version_string", Seed(R"("schemaVersion":1)", R"("schemaVersion":"1")"),
              R::kInvalidSchemaVersion),
      Invalid("occurred_at", Seed("2026-07-31T12:00:00Z", "x"), R::kInvalidTime),
  };
}

TEST(EnvelopeSchema, ContractProfileAgreesWithValidate) {
  ExpectVerdicts({.profile = Profile::Contract()}, true, ContractCases());
}

// --- profile files -----------------------------------------------------------------------------

// A passthrough file profile that reads the subject from a member whose name is no extension
// name: validate refuses it as one unless it holds null, and so does the schema.
TEST(EnvelopeSchema, AProfileFileWithPassthroughAgrees) {
  auto profile = Profile::FromJson(
      R"({"name":"legacy file","passthrough":true,"attributes":{"subject":"/Subject"}})");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const std::string base = R"({"specversion":"1.0","id":"a","source":"s","type":"t")";
  ExpectVerdicts(
      {.profile = *profile}, true,
      {Valid("no_subject", base + "}"), Valid("null_subject", base + R"(,"Subject":null})"),
       Invalid("subject", base + R"(,"Subject":"x"})", EnvelopeReason::kInvalidAttributeName)});
}

// A required attribute the profile reads from nowhere: every event is refused by both.
TEST(EnvelopeSchema, ARequiredAttributeReadFromNowhereRefusesEverything) {
  Profile profile;
  profile.name = "nothing";
  profile.passthrough = false;
  ExpectVerdicts({.profile = profile}, true,
                 {Invalid("event", std::string(kEvent), EnvelopeReason::kMissingSpecversion)});
}

// docs/envelope.md: a profile's constants are validate's to check (they are not in the
// document), and a pointer step through an array is followed by validate only.
TEST(EnvelopeSchema, ConstantsAndArrayStepsAreDocumentedDifferences) {
  Profile constant = Profile::Flat();
  constant.constants = {{"specversion", "2.0"}};
  ExpectVerdicts({.profile = constant}, true,
                 {Differs(SchemaSays::kAccepts, "constant_specversion", std::string(kFlat),
                          EnvelopeReason::kUnsupportedSpecversion)});
  const Profile through_array = Profile::Contract().WithAttributeAt("subject", "/subjects/0");
  ExpectVerdicts(
      {.profile = through_array}, true,
      {Differs(SchemaSays::kRejects, "subject_in_an_array",
               Seed(R"("subject":"order-104")", R"("subjects":["order-104"])"), std::nullopt)});
}

// --- the examples as vectors -------------------------------------------------------------------

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(EVIDENT_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rejections of input no JSON parser reads: the schema never sees a document.
bool IsNoDocument(EnvelopeReason reason) {
  return reason == EnvelopeReason::kMalformedJson || reason == EnvelopeReason::kInvalidUtf8 ||
         reason == EnvelopeReason::kLoneSurrogate || reason == EnvelopeReason::kNumberOutOfRange;
}

// Rejections for a rule the schema cannot express. validate stops at the first failing check,
// so what the schema says of such an event depends on the rest of it.
bool IsInexpressible(EnvelopeReason reason) {
  return reason == EnvelopeReason::kEnvelopeTooLarge ||
         reason == EnvelopeReason::kDuplicateMember || reason == EnvelopeReason::kNestingTooDeep ||
         reason == EnvelopeReason::kSourceOutsideBoundary;
}

// Each event of the example file `relative`, judged by validate, then by the schema: the same
// verdict, except where validate's reason is a documented difference. Returns how many events
// were judged.
size_t JudgeExample(const std::string& relative, const EnvelopeOptions& options) {
  Judges judges = MakeJudges(options, /*format_assertion=*/true);
  if (judges.parser == nullptr || judges.compiled == nullptr) return 0;
  const std::string text = ReadSource(relative);
  const SplitInput split = SplitEvents(text);
  size_t judged = 0;
  for (const InputSlice& slice : split.slices) {
    if (slice.rejection.has_value()) continue;  // the splitter's verdict, before any parser
    Case c{relative + " #" + std::to_string(slice.index), std::string(slice.bytes), std::nullopt};
    c.reason = ValidateReason(*judges.parser, c.input);
    ++judged;
    if (c.reason.has_value() && IsInexpressible(*c.reason)) continue;
    if (c.reason.has_value() && IsNoDocument(*c.reason)) c.schema_says = SchemaSays::kNoDocument;
    ExpectVerdict(judges, c);
  }
  return judged;
}

TEST(EnvelopeSchema, TheExampleEnvelopesAgreeWithValidate) {
  EXPECT_EQ(JudgeExample("examples/envelopes/orders.ndjson", {.require_schema_version = true}), 9u);
  EXPECT_EQ(JudgeExample("examples/envelopes/batch.json", SchemaVersionAtOptions()), 2u);
  EXPECT_EQ(JudgeExample("examples/envelopes/flat.ndjson", FlatOptions()), 2u);
  EXPECT_EQ(JudgeExample("examples/envelopes/seed-000.json", {.profile = Profile::Contract()}), 1u);
  for (const char* events : {"examples/orders/events.ndjson", "examples/orders/events-v4.ndjson",
                             "examples/orders/events-later.ndjson"}) {
    EXPECT_GT(JudgeExample(events, {}), 0u) << events;
  }
}

// Every reason code is either agreed on or a documented difference, in the cases above.
TEST(EnvelopeSchema, EveryReasonCodeIsCovered) {
  std::set<EnvelopeReason> seen;
  for (const std::vector<Case>& cases :
       {CloudEventsRequiredAndTypes(), CloudEventsExtensionsAndVersions(), CloudEventsFormatCases(),
        CloudEventsDifferences(), BoundaryDifference(), SchemaVersionAtCases(), FlatInvalid(),
        ContractCases()}) {
    for (const Case& c : cases) {
      if (c.reason.has_value()) seen.insert(*c.reason);
    }
  }
  for (const EnvelopeReason reason : AllEnvelopeReasons()) {
    EXPECT_TRUE(seen.count(reason) == 1) << ReasonCode(reason) << " has no case";
  }
}

// --- the document ------------------------------------------------------------------------------

std::string StringAt(simdjson::dom::element document, std::string_view pointer) {
  std::string_view text;
  if (document.at_pointer(pointer).get(text) != simdjson::SUCCESS) return "<absent>";
  return std::string(text);
}

std::vector<std::string> StringsAt(simdjson::dom::element document, std::string_view pointer) {
  std::vector<std::string> strings;
  simdjson::dom::array array;
  if (document.at_pointer(pointer).get(array) != simdjson::SUCCESS) return strings;
  for (simdjson::dom::element item : array) {
    std::string_view text;
    if (item.get(text) == simdjson::SUCCESS) strings.emplace_back(text);
  }
  return strings;
}

TEST(EnvelopeSchema, TheDocumentDescribesEachProfilesLayout) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  Result<std::string> cloudevents = EnvelopeJsonSchema({});
  ASSERT_TRUE(cloudevents.ok()) << cloudevents.status().ToString();
  ASSERT_EQ(parser.parse(*cloudevents).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(StringAt(doc, "/$schema"), "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(StringAt(doc, "/$id"), "https://evident.dev/schemas/envelope/cloudevents.json");
  EXPECT_EQ(StringsAt(doc, "/required"),
            (std::vector<std::string>{"specversion", "id", "source", "type"}));
  EXPECT_EQ(StringAt(doc, "/properties/specversion/const"), "1.0");
  EXPECT_EQ(StringAt(doc, "/properties/time/format"), "date-time");
  EXPECT_TRUE(doc.at_pointer("/additionalProperties").is_object());

  Result<std::string> flat = EnvelopeJsonSchema(FlatOptions());
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  ASSERT_EQ(parser.parse(*flat).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(
      StringsAt(doc, "/required"),
      (std::vector<std::string>{"event.id", "producer.id", "event.name", "event.schema_version"}));
  EXPECT_FALSE(doc.at_pointer("/additionalProperties").error() == simdjson::SUCCESS);

  Result<std::string> contract = EnvelopeJsonSchema({.profile = Profile::Contract()});
  ASSERT_TRUE(contract.ok()) << contract.status().ToString();
  ASSERT_EQ(parser.parse(*contract).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(StringsAt(doc, "/properties/data/required"),
            (std::vector<std::string>{"schemaVersion"}));
  EXPECT_EQ(StringAt(doc, "/$id"), "https://evident.dev/schemas/envelope/contract.json");
}

TEST(EnvelopeSchema, RefusesOptionsTheParserRefuses) {
  Profile unknown = Profile::CloudEvents();
  unknown.attribute_pointers.emplace_back("nonsense", "/x");
  EXPECT_FALSE(EnvelopeJsonSchema({.profile = unknown}).ok());
  Profile bad_pointer = Profile::CloudEvents();
  bad_pointer.attribute_pointers.emplace_back("subject", "no-slash");
  EXPECT_FALSE(EnvelopeJsonSchema({.profile = bad_pointer}).ok());
}

}  // namespace
}  // namespace evident
