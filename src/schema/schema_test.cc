// Unit and hostile-input tests for evident/schema.h (the official suite is suite_test.cc).
#include "evident/schema.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

namespace evident::schema {
namespace {

namespace dom = simdjson::dom;

std::shared_ptr<const Schema> MustCompile(std::string_view json, CompileOptions options = {}) {
  Registry registry;
  auto schema = Schema::Compile(json, registry, options);
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  return schema.ok() ? *schema : nullptr;
}

Status CompileStatus(std::string_view json, CompileOptions options = {}) {
  Registry registry;
  auto schema = Schema::Compile(json, registry, options);
  return schema.status();
}

constexpr std::string_view kOrderV1 = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/orders/order.status.changed/1",
  "type": "object",
  "required": ["schemaVersion", "orderId", "status"],
  "properties": {
    "schemaVersion": {"type": "integer"},
    "orderId": {"type": "string"},
    "status": {"$ref": "#/$defs/status"}
  },
  "$defs": {"status": {"type": "string", "enum": ["created", "paid", "shipped"]}}
})";

TEST(Schema, ValidAndInvalidOrders) {
  auto schema = MustCompile(kOrderV1);
  dom::parser parser;
  EXPECT_TRUE(schema->IsValid(
      parser.parse(R"({"schemaVersion":1,"orderId":"o-1","status":"paid"})"_padded)));
  EXPECT_FALSE(schema->IsValid(
      parser.parse(R"({"schemaVersion":1.5,"orderId":"o-1","status":"paid"})"_padded)));
  const Output ok =
      schema->Validate(parser.parse(R"({"schemaVersion":1,"orderId":"x","status":"paid"})"_padded));
  EXPECT_TRUE(ok.valid);
  EXPECT_TRUE(ok.errors.empty());
}

TEST(Schema, ErrorsHaveBasicOutputLocationsThroughRef) {
  auto schema = MustCompile(kOrderV1);
  dom::parser parser;
  const Output out =
      schema->Validate(parser.parse(R"({"schemaVersion":1,"status":"lost"})"_padded));
  ASSERT_FALSE(out.valid);
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0].instance_location, "/status");
  EXPECT_EQ(out.errors[0].keyword_location, "/properties/status/$ref/enum");
  EXPECT_EQ(out.errors[0].absolute_keyword_location,
            "https://example.com/orders/order.status.changed/1#/$defs/status/enum");
  EXPECT_EQ(out.errors[1].instance_location, "");
  EXPECT_EQ(out.errors[1].keyword_location, "/required");
  EXPECT_NE(out.errors[1].error.find("orderId"), std::string::npos);
}

TEST(Schema, DialectFromOptionAndDraft7RefOverridesSiblings) {
  CompileOptions options;
  options.default_dialect = Dialect::kDraft7;
  auto schema = MustCompile(R"({"definitions":{"s":{"type":"string"}},
                                "$ref":"#/definitions/s","maxLength":2})",
                            options);
  EXPECT_EQ(schema->dialect(), Dialect::kDraft7);
  dom::parser parser;
  // maxLength is ignored next to $ref in draft 7.
  EXPECT_TRUE(schema->IsValid(parser.parse(R"("long string")"_padded)));
  auto schema2020 =
      MustCompile(R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":2})");
  EXPECT_FALSE(schema2020->IsValid(parser.parse(R"("long string")"_padded)));
}

TEST(Schema, FormatIsAnnotationUnlessAsserted) {
  dom::parser parser;
  const auto instance = R"("not-a-date")"_padded;
  EXPECT_TRUE(MustCompile(R"({"format":"date"})")->IsValid(parser.parse(instance)));
  CompileOptions options;
  options.format_assertion = true;
  EXPECT_FALSE(MustCompile(R"({"format":"date"})", options)->IsValid(parser.parse(instance)));
  EXPECT_TRUE(MustCompile(R"({"format":"date"})", options)
                  ->IsValid(parser.parse(R"("2024-02-29")"_padded)));
}

TEST(Schema, RegistryServesReferencesAndNeverFetches) {
  Registry registry;
  ASSERT_TRUE(
      registry.Add("https://example.com/money.json", R"({"type":"object","required":["amount"]})")
          .ok());
  auto schema = Schema::Compile(R"({"$ref":"https://example.com/money.json"})", registry, {});
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  dom::parser parser;
  EXPECT_FALSE((*schema)->IsValid(parser.parse(R"({})"_padded)));
  auto missing =
      Schema::Compile(R"({"$ref":"https://json-schema.org/unknown.json"})", registry, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("never fetched"), std::string::npos);
}

TEST(Schema, RegistryDirectoryRefusesParentSegments) {
  Registry registry;
  ASSERT_TRUE(registry.AddDirectory("http://localhost:1234/", "/tmp").ok());
  EXPECT_FALSE(registry.Load("http://localhost:1234/../etc/passwd").ok());
  EXPECT_EQ(registry.Load("http://other/x.json").status().code(), Code::kNotFound);
}

TEST(Schema, BuiltinMetaschemaValidatesSchemas) {
  auto meta = MustCompile(R"({"$ref":"https://json-schema.org/draft/2020-12/schema"})");
  dom::parser parser;
  EXPECT_TRUE(meta->IsValid(parser.parse(kOrderV1.data(), kOrderV1.size())));
  EXPECT_FALSE(meta->IsValid(parser.parse(R"({"minLength":-1})"_padded)));
  EXPECT_FALSE(meta->IsValid(parser.parse(R"({"properties":{"a":{"type":"strin"}}})"_padded)));
}

TEST(Schema, UnevaluatedPropertiesSeesThroughApplicators) {
  auto schema = MustCompile(R"({"allOf":[{"properties":{"a":true}}],
      "anyOf":[{"properties":{"b":true}},{"required":["zzz"]}],"unevaluatedProperties":false})");
  dom::parser parser;
  EXPECT_TRUE(schema->IsValid(parser.parse(R"({"a":1,"b":2})"_padded)));
  const Output out = schema->Validate(parser.parse(R"({"a":1,"c":2})"_padded));
  ASSERT_FALSE(out.valid);
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].instance_location, "/c");
  EXPECT_EQ(out.errors[0].keyword_location, "/unevaluatedProperties");
}

TEST(Schema, ValidateIsThreadSafe) {
  auto schema = MustCompile(kOrderV1);
  auto work = [&] {
    dom::parser parser;
    for (int i = 0; i < 2000; ++i) {
      EXPECT_TRUE(schema->IsValid(
          parser.parse(R"({"schemaVersion":1,"orderId":"o","status":"paid"})"_padded)));
      EXPECT_EQ(schema->Validate(parser.parse(R"({"orderId":"o"})"_padded)).errors.size(), 2u);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
}

// ---- hostile inputs -----------------------------------------------------------------------

TEST(Hostile, CatastrophicRegexRunsInLinearTime) {
  auto schema = MustCompile(R"({"pattern":"^(a+)+$","patternProperties":{"^(a|aa)+$":false}})");
  std::string text(200'000, 'a');
  text += '!';
  const std::string instance = "\"" + text + "\"";
  dom::parser parser;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(schema->IsValid(parser.parse(instance)));
  const Output out = schema->Validate(parser.parse(instance));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(out.valid);
  // A backtracking engine needs ~2^200000 steps here; RE2 needs milliseconds.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 2000);
  const std::string object = "{\"" + text + "\":1}";
  EXPECT_TRUE(schema->IsValid(parser.parse(object)));
}

TEST(Hostile, SelfReferencingRefIsACompileError) {
  for (std::string_view json : {
           R"({"$ref":"#"})",
           R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})",
           R"({"anyOf":[{"type":"string"},{"$ref":"#"}]})",
           R"({"$defs":{"a":{"allOf":[{"not":{"$ref":"#/$defs/a"}}]}},"$ref":"#/$defs/a"})",
           R"({"dependentSchemas":{"x":{"$ref":"#"}}})",
       }) {
    const Status status = CompileStatus(json);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << json;
    EXPECT_NE(status.message().find("cycle"), std::string::npos) << status.message();
  }
  CompileOptions draft7;
  draft7.default_dialect = Dialect::kDraft7;
  EXPECT_FALSE(
      CompileStatus(R"({"definitions":{"a":{"$ref":"#"}},"$ref":"#/definitions/a"})", draft7).ok());
  // Recursion that consumes the instance is fine.
  EXPECT_TRUE(CompileStatus(R"({"properties":{"next":{"$ref":"#"}}})").ok());
}

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(Hostile, TenThousandDeepInstanceIsRejectedWithoutStackOverflow) {
  auto schema = MustCompile(R"({"items":{"$ref":"#"},"enum":[[[[[]]]]],"type":"array"})");
  const std::string deep = Nested(10'000);
  // simdjson's default parser refuses documents deeper than 1024 levels outright...
  dom::parser default_parser;
  EXPECT_FALSE(default_parser.parse(deep).error() == simdjson::SUCCESS);
  // ...and a parser configured deeper hands the validator a 10,000-deep document, which must
  // be rejected by the validator's own depth bound.
  dom::parser deep_parser;
  ASSERT_EQ(deep_parser.allocate(deep.size(), 20'000), simdjson::SUCCESS);
  dom::element instance;
  ASSERT_EQ(deep_parser.parse(deep).get(instance), simdjson::SUCCESS);
  EXPECT_FALSE(schema->IsValid(instance));
  const Output out = schema->Validate(instance);
  EXPECT_FALSE(out.valid);
  ASSERT_FALSE(out.errors.empty());
  // Without the enum, recursion alone hits the bound.
  auto recursive = MustCompile(R"({"items":{"$ref":"#"}})");
  EXPECT_FALSE(recursive->IsValid(instance));
  bool depth_error = false;
  for (const Error& error : recursive->Validate(instance).errors) {
    depth_error |= error.error.find("depth") != std::string::npos;
  }
  EXPECT_TRUE(depth_error);
  // Within the bound the same schema accepts nested arrays.
  EXPECT_TRUE(recursive->IsValid(deep_parser.parse(Nested(100))));
}

TEST(Hostile, HugeErrorListsAreBounded) {
  auto schema = MustCompile(R"({"items":{"type":"string"}})");
  std::string instance = "[";
  for (int i = 0; i < 100'000; ++i) instance += i == 0 ? "1" : ",1";
  instance += "]";
  dom::parser parser;
  const Output out = schema->Validate(parser.parse(instance), 16);
  EXPECT_FALSE(out.valid);
  EXPECT_EQ(out.errors.size(), 16u);
  EXPECT_TRUE(out.errors_truncated);
  EXPECT_EQ(out.errors[15].instance_location, "/15");
  const Output none = schema->Validate(parser.parse(instance), 0);
  EXPECT_TRUE(none.errors.empty());
  EXPECT_TRUE(none.errors_truncated);
}

TEST(Hostile, UnsupportedPatternsAreCompileErrors) {
  for (std::string_view json :
       {R"j({"pattern":"a(?=b)"})j", R"j({"pattern":"(?<!x)y"})j", R"j({"pattern":"(a)\\1"})j",
        R"j({"patternProperties":{"(?!x)":true}})j"}) {
    const Status status = CompileStatus(json);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << json;
    EXPECT_NE(status.message().find("not supported"), std::string::npos) << status.message();
  }
  EXPECT_FALSE(CompileStatus(R"j({"pattern":"(unclosed"})j").ok());
}

TEST(Hostile, LimitsAreEnforced) {
  CompileOptions options;
  options.schema_nodes_max = 3;
  EXPECT_EQ(CompileStatus(R"({"properties":{"a":{},"b":{},"c":{}}})", options).code(),
            Code::kLimitExceeded);
  options = {};
  options.schema_bytes_max = 10;
  EXPECT_EQ(CompileStatus(R"({"type":"string"})", options).code(), Code::kLimitExceeded);
  EXPECT_FALSE(CompileStatus("{not json").ok());
  EXPECT_FALSE(CompileStatus(R"({"type":"strin"})").ok());
  EXPECT_FALSE(CompileStatus(R"({"minLength":-1})").ok());
}

TEST(Hostile, WideUniqueItemsIsNotQuadratic) {
  auto schema = MustCompile(R"({"uniqueItems":true})");
  std::string instance = "[";
  for (int i = 0; i < 50'000; ++i) {
    if (i > 0) instance += ',';
    instance += std::to_string(i);  // appended apart: GCC 12's -Wrestrict false positive
  }
  instance += ",1.0]";
  dom::parser parser;
  const auto start = std::chrono::steady_clock::now();
  const Output out = schema->Validate(parser.parse(instance));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(out.valid);  // 1 and 1.0 are equal
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 2000);
}

// "$schema" and "format" have string values only; another type is a broken schema, refused at
// compile time rather than ignored.
TEST(Schema, NonStringSchemaAndFormatAreRefused) {
  for (const char* json : {R"({"$schema":5,"type":"object"})",
                           R"({"properties":{"a":{"format":5}}})", R"({"format":["date"]})"}) {
    for (const bool assert_format : {false, true}) {
      const Status status = CompileStatus(json, {.format_assertion = assert_format});
      EXPECT_EQ(status.code(), Code::kInvalidArgument) << json << " " << status.ToString();
    }
  }
  EXPECT_TRUE(CompileStatus(R"({"format":"date"})").ok());
}

// ---- bounded work (validation_steps_max, memoization, linear compilation) -------------------

// A oneOf whose two branches both recurse through "next" and differ only in "kind".
constexpr std::string_view kRecursiveOneOf = R"({
  "$ref": "#/$defs/node",
  "$defs": {"node": {"oneOf": [
    {"type": "object", "required": ["kind"],
     "properties": {"next": {"$ref": "#/$defs/node"}, "kind": {"const": "a"}}},
    {"type": "object", "required": ["kind"],
     "properties": {"next": {"$ref": "#/$defs/node"}, "kind": {"const": "b"}}}
  ]}}
})";

// {"next":{"next":{"kind":K},"kind":"a"},"kind":"a"}: the discriminating member comes last, so
// both branches evaluate "next" before one of them fails.
std::string DiscriminatorLast(size_t depth, std::string_view innermost_kind) {
  std::string instance = R"({"kind":")" + std::string(innermost_kind) + R"("})";
  for (size_t i = 0; i < depth; ++i) instance = R"({"next":)" + instance + R"(,"kind":"a"})";
  return instance;
}

// $defs d0..d{count-1}, each an allOf of two $refs to the next, the last {"type":"object"};
// `root_extra` is added to the root (which refers to d0).
std::string DoublingChain(size_t count, std::string_view root_extra = "") {
  std::string schema = R"({"$ref":"#/$defs/d0")" + std::string(root_extra) + R"(,"$defs":{)";
  for (size_t i = 0; i < count; ++i) {
    const std::string next = "\"#/$defs/d" + std::to_string(i + 1) + "\"";
    schema += "\"d" + std::to_string(i) + R"(":{"allOf":[{"$ref":)" + next + R"(},{"$ref":)" +
              next + "}]},";
  }
  return schema + "\"d" + std::to_string(count) + R"(":{"type":"object"}}})";
}

TEST(Bounded, RecursiveOneOfWithTheDiscriminatorLastIsLinear) {
  // 2^40 evaluations without memoization; each (node, location) once with it.
  auto schema = MustCompile(kRecursiveOneOf);
  dom::parser parser;
  const std::string valid = DiscriminatorLast(40, "a");
  EXPECT_TRUE(schema->IsValid(parser.parse(valid)));
  Output out = schema->Validate(parser.parse(valid));
  EXPECT_TRUE(out.valid);
  EXPECT_FALSE(out.budget_exceeded);
  EXPECT_LT(out.steps, 5'000u);
  // Invalid at the innermost level: both passes stay linear, and the errors say where.
  const std::string invalid = DiscriminatorLast(40, "c");
  EXPECT_FALSE(schema->IsValid(parser.parse(invalid)));
  out = schema->Validate(parser.parse(invalid));
  EXPECT_FALSE(out.valid);
  EXPECT_FALSE(out.budget_exceeded);
  EXPECT_LT(out.steps, 20'000u);
  ASSERT_FALSE(out.errors.empty());
  std::string innermost_kind;
  for (int i = 0; i < 40; ++i) innermost_kind += "/next";
  innermost_kind += "/kind";
  bool innermost = false;
  for (const Error& error : out.errors) innermost |= error.instance_location == innermost_kind;
  EXPECT_TRUE(innermost) << out.errors[0].instance_location;
}

TEST(Bounded, DoublingRefChainIsLinear) {
  // A schema alone: 40 $defs, each an allOf of two $refs to the next (2^40 paths to the last).
  auto schema = MustCompile(DoublingChain(40));
  dom::parser parser;
  Output out = schema->Validate(parser.parse(std::string_view("{}")));
  EXPECT_TRUE(out.valid);
  EXPECT_LT(out.steps, 5'000u);
  out = schema->Validate(parser.parse(std::string_view("1")));
  EXPECT_FALSE(out.valid);
  EXPECT_FALSE(out.budget_exceeded);
  EXPECT_LT(out.steps, 20'000u);
  ASSERT_FALSE(out.errors.empty());
  EXPECT_NE(out.errors[0].error.find("expected object"), std::string::npos) << out.errors[0].error;
}

TEST(Bounded, WorkMemoizationCannotShortenRunsOutOfBudget) {
  // unevaluatedProperties needs the annotations of every path, so nothing is memoized: the
  // budget stops it, and the outcome says so instead of claiming the instance is wrong.
  const std::string json = DoublingChain(40, R"(,"unevaluatedProperties":false)");
  CompileOptions options;
  options.validation_steps_max = 100'000;
  auto schema = MustCompile(json, options);
  dom::parser parser;
  const dom::element instance = parser.parse(std::string_view("{}"));
  EXPECT_FALSE(schema->IsValid(instance));
  Output out = schema->Validate(instance);
  EXPECT_FALSE(out.valid);
  EXPECT_TRUE(out.budget_exceeded);
  EXPECT_GT(out.steps, 100'000u);
  EXPECT_LT(out.steps, 100'100u);
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_NE(out.errors[0].error.find("validation_steps_max (100000 steps)"), std::string::npos)
      << out.errors[0].error;
  // The default budget bounds it too.
  out = MustCompile(json)->Validate(instance);
  EXPECT_TRUE(out.budget_exceeded);
  EXPECT_GT(out.steps, CompileOptions{}.validation_steps_max);
  // Within the budget the same schema answers normally.
  auto small = MustCompile(DoublingChain(4, R"(,"unevaluatedProperties":false)"), options);
  EXPECT_TRUE(small->Validate(instance).valid);
  out = small->Validate(parser.parse(std::string_view(R"({"x":1})")));
  EXPECT_FALSE(out.valid);
  EXPECT_FALSE(out.budget_exceeded);
}

TEST(Bounded, WidePropertiesAndRequiredCompileInLinearTime) {
  // 190,000 properties, all required: quadratic compilation took minutes.
  constexpr size_t kCount = 190'000;
  std::string json = R"({"type":"object","properties":{)";
  std::string required;
  for (size_t i = 0; i < kCount; ++i) {
    const std::string name = "\"p" + std::to_string(i) + "\"";
    if (i > 0) {
      json += ',';
      required += ',';
    }
    json += name + R"(:{"type":"integer"})";
    required += name;
  }
  json += "},\"required\":[" + required + "]}";
  auto schema = MustCompile(json);
  ASSERT_NE(schema, nullptr);
  dom::parser parser;
  const Output out =
      schema->Validate(parser.parse(std::string_view(R"({"p7":1,"p189999":"x"})")), 2);
  EXPECT_FALSE(out.valid);
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0].instance_location, "/p189999");
  EXPECT_NE(out.errors[1].error.find("missing required property"), std::string::npos);
}

TEST(Bounded, WideAnyOfAndManyRefsCompileInLinearTime) {
  // An anyOf of 150,000 branches: each was found again by a walk along the array.
  constexpr size_t kBranches = 150'000;
  std::string json = R"({"anyOf":[)";
  for (size_t i = 0; i < kBranches; ++i) {
    if (i > 0) json += ',';
    json += "{\"const\":" + std::to_string(i) + "}";
  }
  auto schema = MustCompile(json + "]}");
  ASSERT_NE(schema, nullptr);
  dom::parser parser;
  EXPECT_TRUE(schema->IsValid(parser.parse(std::string_view("149999"))));
  EXPECT_FALSE(schema->IsValid(parser.parse(std::string_view("-1"))));
  // 90,000 $refs into 90,000 $defs: each reference was resolved by a walk along the members.
  constexpr size_t kDefs = 90'000;
  json = R"({"anyOf":[)";
  std::string defs;
  for (size_t i = 0; i < kDefs; ++i) {
    if (i > 0) {
      json += ',';
      defs += ',';
    }
    json += "{\"$ref\":\"#/$defs/d" + std::to_string(i) + "\"}";
    defs += "\"d" + std::to_string(i) + "\":{\"const\":" + std::to_string(i) + "}";
  }
  schema = MustCompile(json + "],\"$defs\":{" + defs + "}}");
  ASSERT_NE(schema, nullptr);
  EXPECT_TRUE(schema->IsValid(parser.parse(std::string_view("89999"))));
  EXPECT_FALSE(schema->IsValid(parser.parse(std::string_view("90000"))));
}

}  // namespace
}  // namespace evident::schema

namespace evident::schema {
namespace {

// A $ref whose pointer names an array element by something that is not an index resolves to
// nothing: a compile error, not an exception (found by fuzz_schema).
TEST(Schema, ARefWithANonIndexTokenIntoAnArrayIsAnError) {
  Registry registry;
  // The array under prefixItems, and the last token of a $ref into it.
  const std::pair<const char*, const char*> cases[] = {
      {"[true]", "x"},
      {"[true]", "-1"},
      {"[true]", ""},
      // A number with a tail: std::stoul read "1x" as 1, an element that exists.
      {"[true,true]", "1x"},
      // Past size_t.
      {"[true]", "99999999999999999999"},
  };
  for (const auto& [items, token] : cases) {
    const std::string text = std::string(R"({"prefixItems":)") + items +
                             R"(,"properties":{"a":{"$ref":"#/prefixItems/)" + token + R"("}}})";
    auto schema = Schema::Compile(text, registry, {});
    EXPECT_FALSE(schema.ok()) << text;
    EXPECT_EQ(schema.status().code(), Code::kInvalidArgument)
        << text << ": " << schema.status().ToString();
  }
  auto fine = Schema::Compile(R"({"prefixItems":[{"type":"string"}],"$ref":"#/prefixItems/0"})",
                              registry, {});
  EXPECT_TRUE(fine.ok()) << fine.status().ToString();
}

}  // namespace
}  // namespace evident::schema
