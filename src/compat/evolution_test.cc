// Modes, transitive evolution over a contracts directory, consumer impact, lint, hostile input,
// and the seeds' cases (docs/contracts.md).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "compat/report.h"
#include "evident/compat.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

constexpr const char* kD2020 = R"("$schema":"https://json-schema.org/draft/2020-12/schema")";

std::string Schema(const std::string& body) { return std::string("{") + kD2020 + "," + body + "}"; }

// A scratch contracts directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("evident_compat_" + std::string(info->test_suite_name()) +
                                         "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  void Write(const std::string& relative, const std::string& text) const {
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

const Change* Find(const std::vector<Change>& changes, ChangeCode code) {
  for (const Change& c : changes) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

std::string SourcePath(const std::string& relative) {
  return std::string(EVIDENT_SOURCE_DIR) + "/" + relative;
}

// ---- names and modes ----------------------------------------------------------------------

TEST(ChangeCodes, NamesAreUniqueScreamingSnakeCaseAndRoundTrip) {
  std::set<std::string> names;
  for (int i = 0; i < kChangeCodeCount; ++i) {
    const auto code = static_cast<ChangeCode>(i);
    const std::string name(ChangeCodeName(code));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_"), std::string::npos) << name;
    auto parsed = ParseChangeCode(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, code);
  }
  EXPECT_FALSE(ParseChangeCode("NOT_A_CODE").ok());
}

TEST(Modes, ParseAndName) {
  for (const char* name : {"backward", "forward", "full", "none", "backward-transitive",
                           "forward-transitive", "full-transitive"}) {
    auto mode = ParseCompatMode(name);
    ASSERT_TRUE(mode.ok()) << name;
    EXPECT_EQ(CompatModeName(*mode), name);
  }
  EXPECT_FALSE(ParseCompatMode("sideways").ok());
  EXPECT_TRUE(IsTransitive(CompatMode::kFullTransitive));
  EXPECT_FALSE(IsTransitive(CompatMode::kFull));
  EXPECT_EQ(*ParseStrictness("strict"), Strictness::kStrict);
  EXPECT_FALSE(ParseStrictness("loose").ok());
}

TEST(Modes, ChangeCompatibilityUnderEachMode) {
  Change backward_only{ChangeCode::kTypeWidened, "", "", true, false, ""};
  EXPECT_TRUE(backward_only.CompatibleUnder(CompatMode::kBackward));
  EXPECT_TRUE(backward_only.CompatibleUnder(CompatMode::kBackwardTransitive));
  EXPECT_FALSE(backward_only.CompatibleUnder(CompatMode::kForward));
  EXPECT_FALSE(backward_only.CompatibleUnder(CompatMode::kFull));
  EXPECT_TRUE(backward_only.CompatibleUnder(CompatMode::kNone));
  Change forward_only{ChangeCode::kTypeNarrowed, "", "", false, true, ""};
  EXPECT_FALSE(forward_only.CompatibleUnder(CompatMode::kBackward));
  EXPECT_TRUE(forward_only.CompatibleUnder(CompatMode::kForwardTransitive));
  EXPECT_FALSE(forward_only.CompatibleUnder(CompatMode::kFullTransitive));
}

TEST(Modes, MeaningChangeFailsEveryModeIncludingNone) {
  auto diff = DiffSchemas(Schema(R"("properties":{"amount":{"type":"integer","x-unit":"cents"}})"),
                          Schema(R"("properties":{"amount":{"type":"integer","x-unit":"euros"}})"));
  ASSERT_TRUE(diff.ok());
  for (const char* name : {"backward", "forward", "full", "none", "backward-transitive",
                           "forward-transitive", "full-transitive"}) {
    EXPECT_FALSE(diff->CompatibleUnder(*ParseCompatMode(name))) << name;
  }
  const Change* change = Find(diff->changes, ChangeCode::kMeaningChanged);
  ASSERT_NE(change, nullptr);
  EXPECT_NE(change->message.find("new contract version or an adapter"), std::string::npos);
}

TEST(Modes, NoneAcceptsAStructuralBreak) {
  auto diff = DiffSchemas(Schema(R"("type":"string")"), Schema(R"("type":"integer")"));
  ASSERT_TRUE(diff.ok());
  EXPECT_FALSE(diff->CompatibleUnder(CompatMode::kBackward));
  EXPECT_TRUE(diff->CompatibleUnder(CompatMode::kNone));
}

TEST(Strictness, AddedOptionalPropertyIsTheDifference) {
  const std::string v1 = Schema(R"("type":"object","properties":{"a":{"type":"string"}})");
  const std::string v2 =
      Schema(R"("type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}})");
  DiffOptions strict;
  strict.strictness = Strictness::kStrict;
  EXPECT_TRUE(DiffSchemas(v1, v2)->CompatibleUnder(CompatMode::kFull));
  EXPECT_FALSE(DiffSchemas(v1, v2, strict)->CompatibleUnder(CompatMode::kBackward));
  EXPECT_TRUE(DiffSchemas(v1, v2, strict)->CompatibleUnder(CompatMode::kForward));
  // Removing it again is the mirror image.
  EXPECT_TRUE(DiffSchemas(v2, v1, strict)->CompatibleUnder(CompatMode::kBackward));
  EXPECT_FALSE(DiffSchemas(v2, v1, strict)->CompatibleUnder(CompatMode::kForward));
}

// ---- errors ---------------------------------------------------------------------------------

TEST(Errors, UnparseableSchemasAreInvalidArgument) {
  const std::string ok = Schema(R"("type":"string")");
  EXPECT_EQ(DiffSchemas("{not json", ok).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(DiffSchemas(ok, "[1,2]").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(DiffSchemas(R"({"$schema":"https://example.test/my-meta"})", ok).status().code(),
            Code::kInvalidArgument);
  auto dangling = DiffSchemas(Schema(R"("properties":{"a":{"$ref":"#/$defs/missing"}})"), ok);
  EXPECT_EQ(dangling.status().code(), Code::kInvalidArgument);
  EXPECT_NE(dangling.status().message().find("#/$defs/missing"), std::string::npos);
  // A fragment that is not a JSON Pointer ("~2" is no escape) resolves to nothing, not to a
  // lenient reading of it (here "a~", which exists).
  const std::string defs = R"("$defs":{"a~":{"type":"string"}},)";
  auto not_a_pointer =
      DiffSchemas(Schema(defs + R"("properties":{"a":{"$ref":"#/$defs/a~2"}})"), ok);
  EXPECT_EQ(not_a_pointer.status().code(), Code::kInvalidArgument);
  EXPECT_NE(not_a_pointer.status().message().find("does not resolve"), std::string::npos);
}

// A member name given twice in one object is refused: found by the compat fuzzer, which diffed
// such a schema against itself and got changes (one look-up saw the first member, another both).
TEST(Errors, RepeatedMemberNameIsInvalidArgument) {
  const std::string ok = Schema(R"("type":"string")");
  const std::string twice =
      Schema(R"("properties":{"a":{"const":2},"b":{"type":"string"},"a":{"const":1}})");
  for (const auto& diff :
       {DiffSchemas(twice, twice), DiffSchemas(twice, ok), DiffSchemas(ok, twice)}) {
    EXPECT_EQ(diff.status().code(), Code::kInvalidArgument) << diff.status().ToString();
    EXPECT_NE(diff.status().message().find("member name 'a' appears twice"), std::string::npos)
        << diff.status().message();
  }
}

TEST(Errors, BooleanRootSchemas) {
  auto diff = DiffSchemas("true", "false");
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  ASSERT_EQ(diff->changes.size(), 1u);
  EXPECT_EQ(diff->changes[0].code, ChangeCode::kTypeNarrowed);
  EXPECT_FALSE(diff->changes[0].backward);
  EXPECT_TRUE(DiffSchemas("true", "{}")->changes.empty());
}

// ---- hostile input --------------------------------------------------------------------------

// anyOf nested `depth` levels deep, `width` branches each, differing only at the leaves: every
// branch pair must be probed at every level.
std::string NestedAnyOf(int depth, int width, const std::string& leaf_type) {
  std::string schema = R"({"type":")" + leaf_type + R"("})";
  for (int level = 0; level < depth; ++level) {
    std::string next = R"({"anyOf":[)";
    for (int i = 0; i < width; ++i) {
      if (i > 0) next += ",";
      next += R"({"allOf":[)" + schema + R"(,{"minLength":)" + std::to_string(i) + "}]}";
    }
    schema = next + "]}";
  }
  return schema;
}

TEST(Hostile, CombinatorialAnyOfIsCutOffByComparisonsMax) {
  const auto start = std::chrono::steady_clock::now();
  auto diff = DiffSchemas(NestedAnyOf(6, 6, "string"), NestedAnyOf(6, 6, "integer"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(diff.ok());
  EXPECT_EQ(diff.status().code(), Code::kLimitExceeded);
  EXPECT_NE(diff.status().message().find("comparisons_max=200000"), std::string::npos);
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

TEST(Hostile, SmallNestingStaysUnderTheLimit) {
  auto diff = DiffSchemas(NestedAnyOf(2, 3, "string"), NestedAnyOf(2, 3, "integer"));
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_NE(Find(diff->changes, ChangeCode::kTypeChanged), nullptr);
}

TEST(Hostile, ALowerLimitIsHonoured) {
  DiffOptions options;
  options.comparisons_max = 10;
  auto diff = DiffSchemas(NestedAnyOf(2, 3, "string"), NestedAnyOf(2, 3, "integer"), options);
  EXPECT_EQ(diff.status().code(), Code::kLimitExceeded);
  EXPECT_NE(diff.status().message().find("comparisons_max=10 "), std::string::npos);
}

// Members that would be compared pairwise: refused by the bound before the work (or the memory
// for its verdicts) is spent.
TEST(Hostile, WideCombinatorChangeIsBounded) {
  std::string members;
  for (int i = 0; i < 50000; ++i)
    members += (i > 0 ? ",{\"const\":" : "{\"const\":") + std::to_string(i) + "}";
  const auto start = std::chrono::steady_clock::now();
  auto any_to_all =
      DiffSchemas(Schema("\"anyOf\":[" + members + "]"), Schema("\"allOf\":[" + members + "]"));
  EXPECT_EQ(any_to_all.status().code(), Code::kLimitExceeded) << any_to_all.status().ToString();
  auto plain_to_one_of =
      DiffSchemas(Schema(R"("type":"integer")"), Schema("\"oneOf\":[" + members + "]"));
  EXPECT_EQ(plain_to_one_of.status().code(), Code::kLimitExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// A base copied into many members: the copies count against the bound.
TEST(Hostile, MergingALargeBaseIntoManyMembersIsBounded) {
  std::string properties;
  for (int i = 0; i < 2000; ++i) {
    properties += (i > 0 ? ",\"p" : "\"p") + std::to_string(i) + "\":{\"type\":\"string\"}";
  }
  std::string members;
  for (int i = 0; i < 1000; ++i) {
    members += (i > 0 ? ",{\"minProperties\":" : "{\"minProperties\":") + std::to_string(i) + "}";
  }
  const auto start = std::chrono::steady_clock::now();
  auto diff =
      DiffSchemas(Schema("\"properties\":{" + properties + "}"),
                  Schema("\"properties\":{" + properties + "},\"anyOf\":[" + members + "]"));
  EXPECT_EQ(diff.status().code(), Code::kLimitExceeded) << diff.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Hostile, DeepPropertyNestingHitsDepthMax) {
  std::string schema = R"({"type":"string"})";
  for (int i = 0; i < 200; ++i) schema = R"({"properties":{"a":)" + schema + "}}";
  auto diff = DiffSchemas(schema, schema);
  EXPECT_EQ(diff.status().code(), Code::kLimitExceeded);
  EXPECT_NE(diff.status().message().find("depth_max"), std::string::npos);
}

TEST(Hostile, DocumentNestingHitsNestingDepthMax) {
  std::string deep(400, '[');
  deep += std::string(400, ']');
  auto diff = DiffSchemas(Schema(R"("const":)" + deep), Schema(R"("type":"array")"));
  EXPECT_EQ(diff.status().code(), Code::kLimitExceeded);
}

TEST(Hostile, CyclicRefsTerminate) {
  // A pure cycle of references never reaches a schema: an error, not a loop.
  auto pure = DiffSchemas(
      Schema(R"("$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a")"),
      Schema(R"("type":"string")"));
  EXPECT_EQ(pure.status().code(), Code::kInvalidArgument);
  EXPECT_NE(pure.status().message().find("cycle"), std::string::npos);
  // A recursive schema compares to itself with no change.
  const std::string tree = Schema(
      R"("$defs":{"t":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/t"}},"up":{"$ref":"#"}}}},"$ref":"#/$defs/t")");
  auto same = DiffSchemas(tree, tree);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE(same->changes.empty());
  // A reference to the root itself.
  auto root = DiffSchemas(Schema(R"("properties":{"self":{"$ref":"#"},"v":{"type":"string"}})"),
                          Schema(R"("properties":{"self":{"$ref":"#"},"v":{"type":"integer"}})"));
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_NE(Find(root->changes, ChangeCode::kTypeChanged), nullptr);
}

// A base reached through a graph of allOf references by many paths (six members wide, eight
// deep: 6^8 paths, but nine schemas) is gathered once per schema when the levels around an
// added property are looked up: the check ends with a verdict, not out of steps. For a
// property and for an array item.
TEST(Hostile, AllOfReferenceGraphsAreGatheredOncePerSchema) {
  for (const bool item : {false, true}) {
    std::string defs = item ? R"("t":{"prefixItems":[{},{"properties":{"a":{"type":"string"}}}]})"
                            : R"("t":{"properties":{"x":{"properties":{"a":{"type":"string"}}}}})";
    for (int k = 0; k < 8; ++k) {
      const std::string next = k + 1 < 8 ? std::string("d").append(std::to_string(k + 1)) : "t";
      std::string member = R"({"$ref":"#/$defs/)";
      member.append(next).append(R"("},)");
      defs.append(",\"d").append(std::to_string(k)).append(R"(":{"allOf":[)");
      for (int w = 0; w < 6; ++w) defs.append(member);
      defs.append(R"({"$ref":"#/$defs/t"}]})");
    }
    const auto schema = [&](const char* added) {
      const std::string value = std::string(R"({"type":"object")") + added + "}";
      return Schema((item ? R"("type":"array","prefixItems":[{},)" + value + "]"
                          : R"("type":"object","properties":{"x":)" + value + "}") +
                    R"(,"allOf":[{"$ref":"#/$defs/d0"}],"$defs":{)" + defs + "}");
    };
    auto diff = DiffSchemas(schema(""), schema(R"(,"properties":{"a":{"type":"integer"}})"));
    ASSERT_TRUE(diff.ok()) << item << ": " << diff.status().ToString();
    // The base declares `a` as a string: the integer one breaks old data, even in lenient.
    EXPECT_FALSE(diff->CompatibleUnder(CompatMode::kBackward)) << item;
  }
}

TEST(Hostile, WideSharedDefinitionsAreBounded) {
  // Each level uses the next twice: 2^40 paths without a bound.
  std::string defs;
  for (int i = 0; i < 40; ++i) {
    if (i > 0) defs += ",";
    defs += "\"d" + std::to_string(i) + "\":{\"properties\":{\"l\":{\"$ref\":\"#/$defs/d" +
            std::to_string(i + 1) + "\"},\"r\":{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) +
            "\"}}}";
  }
  const std::string old_schema =
      Schema("\"$defs\":{" + defs + R"(,"d40":{"type":"string"}},"$ref":"#/$defs/d0")");
  const std::string new_schema =
      Schema("\"$defs\":{" + defs + R"(,"d40":{"type":"integer"}},"$ref":"#/$defs/d0")");
  const auto start = std::chrono::steady_clock::now();
  auto diff = DiffSchemas(old_schema, new_schema);
  EXPECT_EQ(diff.status().code(), Code::kLimitExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Hostile, ManyPropertiesStayNearLinear) {
  // 20000 properties renamed at once, 20000 required names: quadratic matching would take minutes.
  std::string old_properties;
  std::string new_properties;
  std::string required;
  for (int i = 0; i < 20000; ++i) {
    const std::string comma = i > 0 ? "," : "";
    old_properties += comma + "\"old" + std::to_string(i) + R"(":{"type":"string"})";
    new_properties += comma + "\"new" + std::to_string(i) + R"(":{"type":"string"})";
    required += comma + "\"old" + std::to_string(i) + "\"";
  }
  const auto start = std::chrono::steady_clock::now();
  auto diff = DiffSchemas(
      Schema(R"("properties":{)" + old_properties + "},\"required\":[" + required + "]"),
      Schema(R"("properties":{)" + new_properties + "}"));
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_EQ(diff->changes.size(), 20000u);
  EXPECT_EQ(diff->changes.front().code, ChangeCode::kLikelyRename);
  EXPECT_EQ(diff->changes.front().pointer, "/old0");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// ---- the seeds' cases -----------------------------------------------------------------------

TEST(Seeds, PaymentReferenceAddedIsCompatibleAndTheProjectionIsSafe) {
  auto dir = LoadContractsDir(SourcePath("examples/orders/contracts"));
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  auto report = CheckEvolution(*dir, "order.status.changed", CompatMode::kBackward);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // v1 -> v2 adds paymentReference; v2 -> v3 renames status (seed 000's unsafe rename); v3 -> v4
  // republishes it (with an adapter for v2's readers).
  EXPECT_FALSE(report->compatible);
  ASSERT_EQ(report->checks.size(), 3u);
  EXPECT_TRUE(report->checks[0].diff.CompatibleUnder(CompatMode::kBackward));
  const Change* rename = Find(report->checks[1].diff.changes, ChangeCode::kLikelyRename);
  ASSERT_NE(rename, nullptr);
  EXPECT_EQ(rename->suggestion,
            "adapter step (new version to old): - move: {from: /state, to: /status, required: "
            "true}");
  const auto& changes = report->checks[0].diff.changes;
  const Change* added = Find(changes, ChangeCode::kOptionalPropertyAddedToOpenContentModel);
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->pointer, "/paymentReference");
  EXPECT_NE(Find(changes, ChangeCode::kVersionMarkerChanged), nullptr);
  // Strict: the same addition is backward incompatible.
  DiffOptions strict;
  strict.strictness = Strictness::kStrict;
  EXPECT_FALSE(CheckEvolution(*dir, "order.status.changed", CompatMode::kBackward, strict)
                   ->checks[0]
                   .diff.CompatibleUnder(CompatMode::kBackward));

  std::ifstream in(SourcePath("examples/orders/contracts/order.status.changed/v2.schema.json"));
  const std::string v2((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto impact = AnalyzeImpact(*dir, "order.status.changed", v2);
  ASSERT_TRUE(impact.ok()) << impact.status().ToString();
  ASSERT_EQ(impact->consumers.size(), 1u);
  EXPECT_EQ(impact->consumers[0].consumer, "orders-projection");
  EXPECT_TRUE(impact->consumers[0].safe);
  EXPECT_TRUE(impact->all_safe);
}

const char* kStatusV1 = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["schemaVersion", "orderId", "status"],
  "properties": {
    "schemaVersion": {"type": "integer", "const": 1},
    "orderId": {"type": "string", "minLength": 1},
    "status": {"type": "string", "minLength": 1},
    "total": {"type": "integer", "x-unit": "cents", "x-currency": "EUR"}
  }
})";

const char* kConsumer = R"(
id: orders-projection
schemaversion_at: /data/schemaVersion
accepts:
  - type: order.status.changed
    versions: [1]
    reads: [/orderId, /status]
)";

const char* kBilling = R"(
id: billing
accepts:
  - type: order.status.changed
    versions: [1]
    reads: [/orderId, /total]
)";

TEST(Seeds, StatusRenamedToStateIsALikelyRenameAndNeedsAContractUpdate) {
  const std::string v3 = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["schemaVersion", "orderId", "state"],
  "properties": {
    "schemaVersion": {"type": "integer", "const": 3},
    "orderId": {"type": "string", "minLength": 1},
    "state": {"type": "string", "minLength": 1},
    "total": {"type": "integer", "x-unit": "cents", "x-currency": "EUR"}
  }
})";
  auto diff = DiffSchemas(kStatusV1, v3);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  const Change* rename = Find(diff->changes, ChangeCode::kLikelyRename);
  ASSERT_NE(rename, nullptr);
  EXPECT_EQ(rename->pointer, "/status");
  EXPECT_EQ(rename->schema_pointer, "/properties/state");
  EXPECT_NE(rename->message.find("/state"), std::string::npos);
  EXPECT_FALSE(diff->CompatibleUnder(CompatMode::kBackward));
  EXPECT_FALSE(diff->CompatibleUnder(CompatMode::kForward));
  // Neither a plain removal nor a plain addition is reported besides the rename.
  EXPECT_EQ(Find(diff->changes, ChangeCode::kPropertyRemoved), nullptr);
  EXPECT_EQ(Find(diff->changes, ChangeCode::kRequiredPropertyAdded), nullptr);

  TempDir dir;
  dir.Write("order.status.changed/v1.schema.json", kStatusV1);
  dir.Write("consumers/orders-projection.yaml", kConsumer);
  dir.Write("consumers/billing.yaml", kBilling);
  auto contracts = LoadContractsDir(dir.path());
  ASSERT_TRUE(contracts.ok()) << contracts.status().ToString();
  auto impact = AnalyzeImpact(*contracts, "order.status.changed", v3);
  ASSERT_TRUE(impact.ok()) << impact.status().ToString();
  ASSERT_EQ(impact->consumers.size(), 2u);
  EXPECT_EQ(impact->consumers[0].consumer, "billing");
  EXPECT_TRUE(impact->consumers[0].safe);  // reads /orderId and /total only
  const ConsumerImpact& projection = impact->consumers[1];
  EXPECT_FALSE(projection.safe);
  ASSERT_EQ(projection.reasons.size(), 1u);
  EXPECT_EQ(projection.reasons[0].pointer, "/status");
  EXPECT_EQ(projection.reasons[0].code, "LIKELY_RENAME");
  EXPECT_EQ(projection.reasons[0].accepted_version, 1);
  EXPECT_FALSE(impact->all_safe);
}

TEST(Seeds, CurrencyOrUnitChangeIsAMeaningChange) {
  std::string v2 = kStatusV1;
  v2.replace(v2.find("\"EUR\""), 5, "\"USD\"");
  auto diff = DiffSchemas(kStatusV1, v2);
  ASSERT_TRUE(diff.ok());
  ASSERT_EQ(diff->changes.size(), 1u);
  EXPECT_EQ(diff->changes[0].code, ChangeCode::kMeaningChanged);
  EXPECT_EQ(diff->changes[0].pointer, "/total");
  EXPECT_EQ(diff->changes[0].schema_pointer, "/properties/total/x-currency");

  std::string v2_unit = kStatusV1;
  v2_unit.replace(v2_unit.find("\"cents\""), 7, "\"euros\"");
  auto unit = DiffSchemas(kStatusV1, v2_unit);
  ASSERT_TRUE(unit.ok());
  ASSERT_NE(Find(unit->changes, ChangeCode::kMeaningChanged), nullptr);
  EXPECT_FALSE(unit->CompatibleUnder(CompatMode::kNone));

  TempDir dir;
  dir.Write("order.status.changed/v1.schema.json", kStatusV1);
  dir.Write("consumers/orders-projection.yaml", kConsumer);
  dir.Write("consumers/billing.yaml", kBilling);
  auto contracts = LoadContractsDir(dir.path());
  ASSERT_TRUE(contracts.ok());
  auto impact = AnalyzeImpact(*contracts, "order.status.changed", v2);
  ASSERT_TRUE(impact.ok());
  EXPECT_FALSE(impact->consumers[0].safe);  // billing reads /total
  ASSERT_EQ(impact->consumers[0].reasons.size(), 1u);
  EXPECT_EQ(impact->consumers[0].reasons[0].code, "MEANING_CHANGED");
  EXPECT_EQ(impact->consumers[0].reasons[0].pointer, "/total");
  EXPECT_TRUE(impact->consumers[1].safe);  // the projection does not read /total
}

// ---- transitive evolution -------------------------------------------------------------------

TEST(Evolution, TransitiveModeCatchesWhatPairwiseMisses) {
  TempDir dir;
  // v1 has an optional string x; v2 drops it; v3 brings x back as an integer. Each step is
  // backward compatible (lenient), v3 against v1 is not.
  dir.Write("t/v1.schema.json",
            Schema(R"("properties":{"id":{"type":"string"},"x":{"type":"string"}})"));
  dir.Write("t/v2.schema.json", Schema(R"("properties":{"id":{"type":"string"}})"));
  dir.Write("t/v3.schema.json",
            Schema(R"("properties":{"id":{"type":"string"},"x":{"type":"integer"}})"));
  auto contracts = LoadContractsDir(dir.path());
  ASSERT_TRUE(contracts.ok());
  auto pairwise = CheckEvolution(*contracts, "t", CompatMode::kBackward);
  ASSERT_TRUE(pairwise.ok()) << pairwise.status().ToString();
  EXPECT_TRUE(pairwise->compatible);
  ASSERT_EQ(pairwise->checks.size(), 2u);
  EXPECT_EQ(pairwise->checks[1].old_version, 2);
  EXPECT_EQ(pairwise->checks[1].new_version, 3);

  auto transitive = CheckEvolution(*contracts, "t", CompatMode::kBackwardTransitive);
  ASSERT_TRUE(transitive.ok());
  EXPECT_FALSE(transitive->compatible);
  ASSERT_EQ(transitive->checks.size(), 3u);  // 1->2, 1->3, 2->3
  const VersionCheck& v1_v3 = transitive->checks[1];
  EXPECT_EQ(v1_v3.old_version, 1);
  EXPECT_EQ(v1_v3.new_version, 3);
  EXPECT_FALSE(v1_v3.compatible);
  EXPECT_NE(Find(v1_v3.diff.changes, ChangeCode::kTypeChanged), nullptr);
  EXPECT_TRUE(transitive->checks[2].compatible);

  EXPECT_FALSE(CheckEvolution(*contracts, "t", CompatMode::kFullTransitive)->compatible);
  EXPECT_EQ(CheckEvolution(*contracts, "nope", CompatMode::kBackward).status().code(),
            Code::kNotFound);
}

TEST(Evolution, ForwardModeOverADirectory) {
  TempDir dir;
  dir.Write("t/v1.schema.json", Schema(R"("properties":{"s":{"enum":["a","b"]}})"));
  dir.Write("t/v2.schema.json", Schema(R"("properties":{"s":{"enum":["a","b","c"]}})"));
  auto contracts = LoadContractsDir(dir.path());
  ASSERT_TRUE(contracts.ok());
  EXPECT_TRUE(CheckEvolution(*contracts, "t", CompatMode::kBackward)->compatible);
  EXPECT_FALSE(CheckEvolution(*contracts, "t", CompatMode::kForward)->compatible);
  EXPECT_FALSE(CheckEvolution(*contracts, "t", CompatMode::kForwardTransitive)->compatible);
  EXPECT_TRUE(CheckEvolution(*contracts, "t", CompatMode::kNone)->compatible);
}

// ---- consumer impact ------------------------------------------------------------------------

class Impact : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("t/v1.schema.json", Schema(R"("required":["id","amount"],"properties":{
        "id":{"type":"string"},
        "amount":{"$ref":"#/$defs/money"},
        "lines":{"type":"array","items":{"properties":{"sku":{"type":"string"}}}},
        "note":{"type":["string","null"]}},
        "$defs":{"money":{"type":"integer","x-unit":"cents"}})"));
    dir_.Write("consumers/reader.yaml",
               "id: reader\naccepts:\n  - type: t\n    versions: [1]\n"
               "    reads: [/id, /amount, /lines/0/sku, /note]\n");
    dir_.Write("consumers/other.yaml", "id: other\naccepts:\n  - type: u\n    versions: [1]\n");
  }
  ConsumerImpact Run(const std::string& new_schema) {
    auto contracts = LoadContractsDir(dir_.path());
    EXPECT_TRUE(contracts.ok()) << contracts.status().ToString();
    auto report = AnalyzeImpact(*contracts, "t", new_schema);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->consumers.size(), 1u);  // `other` does not subscribe to t
    return report->consumers.at(0);
  }
  static std::string V2(const std::string& properties,
                        const std::string& required = "\"id\",\"amount\"") {
    return Schema(R"("required":[)" + required + R"(],"properties":{)" + properties +
                  R"(},"$defs":{"money":{"type":"integer","x-unit":"cents"}})");
  }
  const std::string kId = R"("id":{"type":"string"})";
  const std::string kAmount = R"("amount":{"$ref":"#/$defs/money"})";
  const std::string kLines =
      R"("lines":{"type":"array","items":{"properties":{"sku":{"type":"string"}}}})";
  const std::string kNote = R"("note":{"type":["string","null"]})";
  TempDir dir_;
};

TEST_F(Impact, UnchangedFieldsAreSafe) {
  const ConsumerImpact impact =
      Run(V2(kId + "," + kAmount + "," + kLines + "," + kNote + R"(,"extra":{"type":"boolean"})"));
  EXPECT_TRUE(impact.safe);
  EXPECT_TRUE(impact.reasons.empty());
}

TEST_F(Impact, TypeChangeOfAReadFieldNeedsAnUpdate) {
  const ConsumerImpact impact =
      Run(V2(R"("id":{"type":"integer"},)" + kAmount + "," + kLines + "," + kNote));
  EXPECT_FALSE(impact.safe);
  ASSERT_EQ(impact.reasons.size(), 1u);
  EXPECT_EQ(impact.reasons[0].pointer, "/id");
  EXPECT_EQ(impact.reasons[0].code, "TYPE_CHANGED");
}

TEST_F(Impact, NarrowingAReadFieldIsSafeForTheReader) {
  const ConsumerImpact impact =
      Run(V2(kId + "," + kAmount + "," + kLines + R"(,"note":{"type":"string","maxLength":9})",
             R"("id","amount","note")"));
  EXPECT_TRUE(impact.safe) << (impact.reasons.empty() ? "" : impact.reasons[0].message);
}

TEST_F(Impact, ARequiredFieldBecomingOptionalNeedsAnUpdate) {
  const ConsumerImpact impact =
      Run(V2(kId + "," + kAmount + "," + kLines + "," + kNote, R"("id")"));
  EXPECT_FALSE(impact.safe);
  ASSERT_EQ(impact.reasons.size(), 1u);
  EXPECT_EQ(impact.reasons[0].pointer, "/amount");
  EXPECT_EQ(impact.reasons[0].code, "REQUIRED_PROPERTY_REMOVED");
}

TEST_F(Impact, MeaningChangeThroughARefNeedsAnUpdate) {
  std::string v2 = V2(kId + "," + kAmount + "," + kLines + "," + kNote);
  v2.replace(v2.find("cents"), 5, "euros");
  const ConsumerImpact impact = Run(v2);
  EXPECT_FALSE(impact.safe);
  ASSERT_EQ(impact.reasons.size(), 1u);
  EXPECT_EQ(impact.reasons[0].code, "MEANING_CHANGED");
  EXPECT_EQ(impact.reasons[0].pointer, "/amount");
}

TEST_F(Impact, ChangesInsideArraysReachTheReadPointer) {
  const ConsumerImpact impact = Run(V2(
      kId + "," + kAmount +
      R"(,"lines":{"type":"array","items":{"properties":{"sku":{"type":["string","integer"]}}}},)" +
      kNote));
  EXPECT_FALSE(impact.safe);
  ASSERT_EQ(impact.reasons.size(), 1u);
  EXPECT_EQ(impact.reasons[0].pointer, "/lines/0/sku");
  EXPECT_EQ(impact.reasons[0].code, "TYPE_WIDENED");
}

TEST_F(Impact, RemovedFieldNeedsAnUpdate) {
  const ConsumerImpact impact = Run(V2(kId + "," + kAmount + "," + kLines));
  EXPECT_FALSE(impact.safe);
  ASSERT_EQ(impact.reasons.size(), 1u);
  EXPECT_EQ(impact.reasons[0].pointer, "/note");
  EXPECT_EQ(impact.reasons[0].code, "PROPERTY_REMOVED");
}

TEST_F(Impact, AcceptedVersionWithoutSchemaIsNotSafe) {
  dir_.Write("consumers/reader.yaml",
             "id: reader\naccepts:\n  - type: t\n    versions: [1, 2]\n    reads: [/id]\n");
  const ConsumerImpact impact = Run(V2(kId + "," + kAmount + "," + kLines + "," + kNote));
  EXPECT_FALSE(impact.safe);
  ASSERT_EQ(impact.reasons.size(), 1u);
  EXPECT_EQ(impact.reasons[0].code, "SCHEMA_MISSING");
  EXPECT_EQ(impact.reasons[0].accepted_version, 2);
}

TEST_F(Impact, JsonShape) {
  auto contracts = LoadContractsDir(dir_.path());
  ASSERT_TRUE(contracts.ok());
  auto report = AnalyzeImpact(*contracts, "t", V2(kId + "," + kAmount + "," + kLines));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(compat::ImpactToJson(*report),
            R"({"type":"t","consumers":[{"consumer":"reader","verdict":"contract-update-required",)"
            R"("reasons":[{"pointer":"/note","code":"PROPERTY_REMOVED","message":"the consumer )"
            R"(reads /note, which the new schema no longer defines","accepted_version":1}]}]})"
            "\n");
}

// ---- lint -----------------------------------------------------------------------------------

std::set<std::string> Codes(const std::vector<LintFinding>& findings) {
  std::set<std::string> codes;
  for (const LintFinding& f : findings) codes.insert(f.code);
  return codes;
}

TEST(Lint, TheOrdersExampleIsClean) {
  auto findings = LintContractsDir(SourcePath("examples/orders/contracts"));
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  EXPECT_TRUE(findings->empty()) << compat::LintToText(*findings);
}

TEST(Lint, ReportsEveryProblem) {
  TempDir dir;
  dir.Write("a/v1.schema.json",
            Schema(R"("properties":{"schemaVersion":{"const":1},"x":{"type":"string"}})"));
  dir.Write("a/v3.schema.json",
            Schema(R"("properties":{"schemaVersion":{"const":2},"y":{"type":"string"}})"));
  dir.Write("a/notes.txt", "hello");
  dir.Write("b/v1.schema.json", "{ not json");
  dir.Write("c/v1.schema.json", "[1, 2]");
  dir.Write("d/v1.schema.json", Schema(R"("properties":{"x":{"$ref":"#/$defs/missing"}})"));
  dir.Write("e/v1.schema.json", R"({"$schema":"https://example.test/custom"})");
  fs::create_directories(dir.path() + "/empty");
  dir.Write("consumers/reader.yaml",
            "id: reader\naccepts:\n"
            "  - type: a\n    versions: [1, 2, 3]\n    reads: [/x, /nowhere, /y]\n"
            "  - type: ghost\n    versions: [1]\n");
  dir.Write("consumers/wrong-name.yaml", "id: someone\naccepts:\n  - type: a\n    versions: 1\n");
  dir.Write("consumers/broken.yaml", "id: [unterminated\n");
  dir.Write("consumers/README.md", "docs");
  auto findings = LintContractsDir(dir.path());
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  const std::set<std::string> codes = Codes(*findings);
  for (const char* code :
       {"VERSION_GAP", "VERSION_MARKER_MISMATCH", "UNRECOGNIZED_FILE", "SCHEMA_NOT_JSON",
        "SCHEMA_NOT_OBJECT", "SCHEMA_UNRESOLVED_REF", "SCHEMA_UNSUPPORTED", "EMPTY_TYPE_DIRECTORY",
        "MISSING_SCHEMA_VERSION", "UNKNOWN_TYPE", "READ_POINTER_UNDEFINED",
        "READ_POINTER_NOT_IN_EVERY_VERSION", "CONSUMER_ID_MISMATCH", "CONSUMER_INVALID"}) {
    EXPECT_EQ(codes.count(code), 1u) << code << "\n" << compat::LintToText(*findings);
  }
  for (const LintFinding& f : *findings) {
    if (f.code == "VERSION_GAP") {
      EXPECT_NE(f.message.find("version 2 of a"), std::string::npos);
    }
    if (f.code == "READ_POINTER_UNDEFINED") {
      EXPECT_NE(f.message.find("/nowhere"), std::string::npos);
    }
    if (f.code == "MISSING_SCHEMA_VERSION") {
      EXPECT_NE(f.message.find("version 2"), std::string::npos);
    }
  }
}

// Each refused schema file gets the code of its kind of problem, whatever its message says:
// a member name given twice or nesting past the limit is not (I-)JSON, a `$schema` that is not
// a string is unsupported, and a file named like another problem's message changes nothing.
TEST(Lint, SchemaProblemsAreClassifiedByKindNotByMessage) {
  TempDir dir;
  dir.Write("twice/v1.schema.json", R"({"type":"object","type":"string"})");
  dir.Write("deep/v1.schema.json", std::string(300, '[') + std::string(300, ']'));
  dir.Write("number-dialect/v1.schema.json", R"({"$schema":7})");
  dir.Write("not valid JSON $ref/v1.schema.json", "[1, 2]");
  dir.Write("unsupported $schema/v1.schema.json",
            Schema(R"("properties":{"x":{"$ref":"#/nope"}})"));
  auto findings = LintContractsDir(dir.path());
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  std::map<std::string, std::string> code_of_type;
  for (const LintFinding& f : *findings) {
    if (f.code.starts_with("SCHEMA_")) {
      code_of_type[fs::path(f.file).parent_path().filename().string()] = f.code;
    }
  }
  EXPECT_EQ(code_of_type["twice"], "SCHEMA_NOT_JSON") << compat::LintToText(*findings);
  EXPECT_EQ(code_of_type["deep"], "SCHEMA_NOT_JSON") << compat::LintToText(*findings);
  EXPECT_EQ(code_of_type["number-dialect"], "SCHEMA_UNSUPPORTED") << compat::LintToText(*findings);
  EXPECT_EQ(code_of_type["not valid JSON $ref"], "SCHEMA_NOT_OBJECT")
      << compat::LintToText(*findings);
  EXPECT_EQ(code_of_type["unsupported $schema"], "SCHEMA_UNRESOLVED_REF")
      << compat::LintToText(*findings);
}

TEST(Lint, DuplicateConsumerIdsAndEnvelopePointers) {
  TempDir dir;
  dir.Write("t/v1.schema.json", Schema(R"("properties":{"id":{"type":"string"}})"));
  dir.Write(
      "consumers/x.yaml",
      "id: x\nschemaversion_at: /data/schemaVersion\naccepts:\n  - type: t\n    versions: [1]\n");
  dir.Write("consumers/y.yaml", "id: x\naccepts:\n  - type: t\n    versions: [1]\n");
  auto findings = LintContractsDir(dir.path());
  ASSERT_TRUE(findings.ok());
  const std::set<std::string> codes = Codes(*findings);
  EXPECT_EQ(codes.count("DUPLICATE_CONSUMER_ID"), 1u);
  EXPECT_EQ(codes.count("ENVELOPE_POINTER_UNDEFINED"), 1u);
}

// A consumer contract with a key given twice is a finding of its own kind, not a clean file.
TEST(Lint, DuplicateYamlKeyIsAFinding) {
  TempDir dir;
  dir.Write("t/v1.schema.json", Schema(R"("properties":{"id":{"type":"string"}})"));
  dir.Write("consumers/x.yaml",
            "id: x\nboundary: []\naccepts:\n  - type: t\n    versions: [1]\n"
            "boundary: [\"training://orders/\"]\n");
  auto findings = LintContractsDir(dir.path());
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  ASSERT_EQ(findings->size(), 1u) << compat::LintToText(*findings);
  EXPECT_EQ((*findings)[0].code, "CONSUMER_DUPLICATE_KEY");
  EXPECT_NE((*findings)[0].message.find("duplicate key 'boundary' at line 6 (first at line 2)"),
            std::string::npos)
      << (*findings)[0].message;
}

TEST(Lint, MissingDirectoryIsAnError) {
  EXPECT_EQ(LintContractsDir("/nonexistent/evident/contracts").status().code(), Code::kNotFound);
}

// A directory with nothing to check is a finding, not "clean" (a wrong path, say the project
// root or an empty checkout, passed lint before).
TEST(Lint, ADirectoryWithoutContractsIsAFinding) {
  TempDir dir;
  auto empty = LintContractsDir(dir.path());
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(Codes(*empty), std::set<std::string>{"EMPTY_CONTRACTS_DIRECTORY"});
  dir.Write("README.md", "contracts live elsewhere\n");
  dir.Write("docs/notes.txt", "not here either\n");  // a directory, taken for a type
  auto other = LintContractsDir(dir.path());
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(Codes(*other).contains("EMPTY_CONTRACTS_DIRECTORY")) << compat::LintToText(*other);
  EXPECT_FALSE(other->empty());
  // Hidden directories are the repository's: neither a type nor a finding.
  dir.Write("repo/.git/HEAD", "ref: refs/heads/main\n");
  dir.Write("repo/a/v1.schema.json", R"({"type":"object"})");
  auto repo = LintContractsDir(dir.path() + "/repo");
  ASSERT_TRUE(repo.ok());
  EXPECT_TRUE(repo->empty()) << compat::LintToText(*repo);
  dir.Write("only/consumers/reader.yaml", "id: reader\naccepts:\n  - type: a\n    versions: 1\n");
  auto some = LintContractsDir(dir.path() + "/only");
  ASSERT_TRUE(some.ok());
  EXPECT_FALSE(Codes(*some).contains("EMPTY_CONTRACTS_DIRECTORY")) << compat::LintToText(*some);
}

// ---- rendering ------------------------------------------------------------------------------

TEST(Report, DiffJsonHasTheDocumentedShape) {
  auto diff = DiffSchemas(Schema(R"("properties":{"a":{"type":"string"}})"),
                          Schema(R"("properties":{"a":{"type":"integer"}})"));
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(compat::DiffToJson(*diff, CompatMode::kBackward, Strictness::kLenient),
            R"({"compatible":false,"mode":"backward","strictness":"lenient","changes":[)"
            R"({"code":"TYPE_CHANGED","pointer":"/a","schema_pointer":"/properties/a/type",)"
            R"("compatible":false,"backward":false,"forward":false,"message":"type of /a )"
            R"(changed from \"string\" to \"integer\""}]})"
            "\n");
  const std::string text = compat::DiffToText(*diff, CompatMode::kBackward, Strictness::kLenient);
  EXPECT_NE(text.find("INCOMPATIBLE (backward, lenient)"), std::string::npos);
  EXPECT_NE(text.find("TYPE_CHANGED  /a"), std::string::npos);
}

}  // namespace
}  // namespace evident
