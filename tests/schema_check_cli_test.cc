// End-to-end tests of `evident schema check`, `evident contracts lint` and
// `evident contracts impact`: the real binary, real files, real exit codes.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

const std::string kOrders = "examples/orders/contracts";
const std::string kType = "order.status.changed";

// A scratch directory with files, removed at the end of the test.
class Scratch {
 public:
  Scratch() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("evident_cli_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() { fs::remove_all(path_); }
  std::string Write(const std::string& relative, const std::string& text) const {
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
  // Copies the orders example so that a test can add a version to it.
  std::string CopyOrders() const {
    fs::copy(SourcePath(kOrders), path_ / "contracts", fs::copy_options::recursive);
    return (path_ / "contracts").string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

const char* kV3Renamed = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["schemaVersion", "orderId", "state"],
  "properties": {
    "schemaVersion": {"type": "integer", "const": 3},
    "orderId": {"type": "string", "minLength": 1},
    "state": {"type": "string", "minLength": 1},
    "paymentReference": {"type": "string"}
  }
})";

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element root;
  EXPECT_EQ(parser.parse(text).get(root), simdjson::SUCCESS) << text;
  return root;
}

TEST(CliSchemaCheck, SeedV1ToV2IsCompatibleText) {
  const auto r =
      RunEvident({"schema", "check", SourcePath(kOrders + "/" + kType + "/v1.schema.json"),
                  SourcePath(kOrders + "/" + kType + "/v2.schema.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("compatible (backward, lenient)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL  /paymentReference"),
            std::string::npos)
      << r.out;
}

TEST(CliSchemaCheck, StrictMakesTheSameAdditionIncompatibleJson) {
  const auto r =
      RunEvident({"schema", "check", SourcePath(kOrders + "/" + kType + "/v1.schema.json"),
                  SourcePath(kOrders + "/" + kType + "/v2.schema.json"), "--strictness", "strict",
                  "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  simdjson::dom::parser parser;
  const auto root = Parse(parser, r.out);
  EXPECT_FALSE(root["compatible"].get_bool().value());
  bool found = false;
  for (const auto change : root["changes"].get_array()) {
    if (std::string_view(change["code"].get_string().value()) ==
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL") {
      found = true;
      EXPECT_EQ(std::string_view(change["pointer"].get_string().value()), "/paymentReference");
      EXPECT_FALSE(change["compatible"].get_bool().value());
      EXPECT_FALSE(std::string_view(change["message"].get_string().value()).empty());
    }
  }
  EXPECT_TRUE(found) << r.out;
}

TEST(CliSchemaCheck, RenameIsIncompatibleWithExitOne) {
  Scratch scratch;
  const std::string v3 = scratch.Write("v3.schema.json", kV3Renamed);
  const auto r =
      RunEvident({"schema", "check", SourcePath(kOrders + "/" + kType + "/v2.schema.json"), v3,
                  "--format", "json", "--mode", "full"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  simdjson::dom::parser parser;
  const auto root = Parse(parser, r.out);
  EXPECT_FALSE(root["compatible"].get_bool().value());
  EXPECT_EQ(std::string_view(root["mode"].get_string().value()), "full");
  const auto change = root["changes"].at(1);
  EXPECT_EQ(std::string_view(change["code"].get_string().value()), "LIKELY_RENAME") << r.out;
  EXPECT_EQ(std::string_view(change["pointer"].get_string().value()), "/status");
}

TEST(CliSchemaCheck, ModeNoneAcceptsTheRenameButNotAMeaningChange) {
  Scratch scratch;
  const std::string v3 = scratch.Write("v3.schema.json", kV3Renamed);
  EXPECT_EQ(RunEvident({"schema", "check", SourcePath(kOrders + "/" + kType + "/v2.schema.json"),
                        v3, "--mode", "none"})
                .exit_code,
            0);
  const std::string a = scratch.Write("a.json", R"({"properties":{"t":{"x-unit":"s"}}})");
  const std::string b = scratch.Write("b.json", R"({"properties":{"t":{"x-unit":"ms"}}})");
  const auto r = RunEvident({"schema", "check", a, b, "--mode", "none"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("MEANING_CHANGED  /t"), std::string::npos) << r.out;
}

TEST(CliSchemaCheck, ContractsDirectoryEveryVersion) {
  const auto r = RunEvident(
      {"schema", "check", "--contracts", SourcePath(kOrders), "--type", kType, "--format", "json"});
  // v2 -> v3 is the seed's unsafe rename of status to state.
  EXPECT_EQ(r.exit_code, 1) << r.err;
  simdjson::dom::parser parser;
  const auto root = Parse(parser, r.out);
  EXPECT_FALSE(root["compatible"].get_bool().value());
  EXPECT_EQ(std::string_view(root["type"].get_string().value()), kType);
  ASSERT_EQ(root["checks"].get_array().size(), 3u);
  EXPECT_TRUE(root["checks"].at(0)["compatible"].get_bool().value());
  EXPECT_TRUE(root["checks"].at(2)["compatible"].get_bool().value());  // v3 -> v4
  // The rename comes with the adapter step that would bridge it.
  bool suggested = false;
  for (auto change : root["checks"].at(1)["changes"].get_array()) {
    std::string_view suggestion;
    if (change["suggestion"].get(suggestion) == simdjson::SUCCESS) {
      EXPECT_NE(suggestion.find("move: {from: /state, to: /status"), std::string_view::npos);
      suggested = true;
    }
  }
  EXPECT_TRUE(suggested) << r.out;
}

TEST(CliSchemaCheck, TransitiveOverAContractsDirectory) {
  Scratch scratch;
  const std::string dir = scratch.CopyOrders();
  scratch.Write("contracts/" + kType + "/v3.schema.json", kV3Renamed);
  const auto pairwise = RunEvident({"schema", "check", "--contracts", dir, "--type", kType});
  EXPECT_EQ(pairwise.exit_code, 1) << pairwise.out << pairwise.err;
  EXPECT_NE(pairwise.out.find("v1 -> v2: compatible"), std::string::npos) << pairwise.out;
  EXPECT_NE(pairwise.out.find("v2 -> v3: INCOMPATIBLE"), std::string::npos) << pairwise.out;
  const auto transitive = RunEvident({"schema", "check", "--contracts", dir, "--type", kType,
                                      "--mode", "backward-transitive", "--format", "json"});
  EXPECT_EQ(transitive.exit_code, 1);
  simdjson::dom::parser parser;
  const auto root = Parse(parser, transitive.out);
  // 1->2, 1->3, 2->3, then the example's v4 against each: 1->4, 2->4, 3->4.
  EXPECT_EQ(root["checks"].get_array().size(), 6u);
}

TEST(CliSchemaCheck, UsageAndInputErrorsExitTwo) {
  Scratch scratch;
  const std::string good = scratch.Write("good.json", R"({"type":"object"})");
  const std::string bad = scratch.Write("bad.json", R"({"type": )");
  EXPECT_EQ(RunEvident({"schema", "check", good}).exit_code, 2);
  EXPECT_EQ(
      RunEvident({"schema", "check", good, good, "--contracts", "x", "--type", "t"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"schema", "check", good, good, "--mode", "sideways"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"schema", "check", good, good, "--strictness", "loose"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"schema", "check", good, good, "--format", "xml"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"schema", "check", good, scratch.path() + "/missing.json"}).exit_code, 2);
  const auto unparseable = RunEvident({"schema", "check", good, bad});
  EXPECT_EQ(unparseable.exit_code, 2);
  EXPECT_NE(unparseable.err.find("not valid JSON"), std::string::npos) << unparseable.err;
  EXPECT_EQ(RunEvident({"schema", "check", "--contracts", SourcePath(kOrders), "--type", "nope"})
                .exit_code,
            2);
  EXPECT_EQ(RunEvident({"schema", "check", good, good}).exit_code, 0);
}

TEST(CliSchemaCheck, CombinatorialSchemaIsCutOffWithAClearError) {
  std::string schema = R"({"type":"string"})";
  std::string other = R"({"type":"integer"})";
  for (int level = 0; level < 6; ++level) {
    std::string next = R"({"anyOf":[)";
    std::string next_other = next;
    for (int i = 0; i < 6; ++i) {
      const std::string bound = R"(,{"maxLength":)" + std::to_string(i) + "}]}";
      if (i > 0) {
        next += ",";
        next_other += ",";
      }
      next += R"({"allOf":[)";
      next += schema;
      next += bound;
      next_other += R"({"allOf":[)";
      next_other += other;
      next_other += bound;
    }
    schema = next + "]}";
    other = next_other + "]}";
  }
  Scratch scratch;
  const auto r = RunEvident({"schema", "check", scratch.Write("a.json", schema),
                             scratch.Write("b.json", other), "--comparisons-max", "50000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("limit-exceeded"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("comparisons_max=50000"), std::string::npos) << r.err;
}

// Issue 40: the three lenient verdicts docs/contracts.md keeps on purpose, as documented.
TEST(CliSchemaCheck, TheLenientVerdictsKeptOnPurpose) {
  Scratch scratch;
  const auto file = [&](const std::string& name, const std::string& extra) {
    return scratch.Write(name,
                         R"({"type":"object","properties":{"a":{"type":"string"})" + extra + "}");
  };
  const struct {
    std::string old_extra, new_extra, code;
    int backward, forward;  // exit codes: 0 compatible, 1 incompatible
  } cases[] = {
      {R"(,"b":{"type":"string"}})", "}", "PROPERTY_REMOVED", 0, 0},
      {R"(},"additionalProperties":false)", "}", "ADDITIONAL_PROPERTIES_WIDENED", 0, 1},
      {R"(},"additionalProperties":{"type":["string","number"]})",
       R"(},"additionalProperties":{"type":"string"})", "TYPE_NARROWED", 1, 0},
  };
  for (const auto& c : cases) {
    const std::string old_file = file("old.json", c.old_extra);
    const std::string new_file = file("new.json", c.new_extra);
    const auto backward = RunEvident({"schema", "check", old_file, new_file, "--mode", "backward"});
    EXPECT_EQ(backward.exit_code, c.backward) << c.code << "\n" << backward.out << backward.err;
    EXPECT_NE(backward.out.find(c.code), std::string::npos) << backward.out;
    const auto forward = RunEvident({"schema", "check", old_file, new_file, "--mode", "forward"});
    EXPECT_EQ(forward.exit_code, c.forward) << c.code << "\n" << forward.out << forward.err;
  }
}

TEST(CliContracts, LintCleanExample) {
  const auto r = RunEvident({"contracts", "lint", SourcePath(kOrders)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("clean"), std::string::npos);
}

TEST(CliContracts, LintFindingsJson) {
  Scratch scratch;
  const std::string dir = scratch.CopyOrders();
  fs::remove(dir + "/" + kType + "/v1.schema.json");
  scratch.Write("contracts/" + kType + "/v3.schema.json", "{ broken");
  const auto r = RunEvident({"contracts", "lint", dir, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  simdjson::dom::parser parser;
  const auto root = Parse(parser, r.out);
  EXPECT_FALSE(root["clean"].get_bool().value());
  std::set<std::string> codes;
  for (const auto finding : root["findings"].get_array()) {
    codes.insert(std::string(finding["code"].get_string().value()));
  }
  EXPECT_EQ(codes.count("VERSION_GAP"), 1u) << r.out;
  EXPECT_EQ(codes.count("SCHEMA_NOT_JSON"), 1u) << r.out;
  EXPECT_EQ(codes.count("MISSING_SCHEMA_VERSION"), 1u) << r.out;
}

// Issue 40: a configuration reads only what its contracts declare. The orders example before
// its correction (orders-projection copies /paymentReference without reading it) is reported by
// lint --config and refused by every command that loads it; the corrected example is clean, and
// `contracts impact` now weighs a change of the member it copies.
TEST(CliContracts, LintConfigReportsReadsBeyondTheContract) {
  Scratch scratch;
  const std::string dir = scratch.CopyOrders();
  fs::copy(SourcePath("examples/orders/evident.yaml"), scratch.path() + "/evident.yaml");
  const std::string config = scratch.path() + "/evident.yaml";
  const auto clean = RunEvident({"contracts", "lint", dir, "--config", config});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;

  const std::string contract = dir + "/consumers/orders-projection.yaml";
  std::ifstream in(contract);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(", /paymentReference]");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, std::string(", /paymentReference]").size(), "]");
  scratch.Write("contracts/consumers/orders-projection.yaml", text);

  const auto found = RunEvident({"contracts", "lint", dir, "--config", config, "--format", "json"});
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  simdjson::dom::parser parser;
  const auto root = Parse(parser, found.out);
  int undeclared = 0;
  for (const auto finding : root["findings"].get_array()) {
    if (std::string_view(finding["code"].get_string().value()) != "UNDECLARED_READ") continue;
    ++undeclared;
    const std::string message(finding["message"].get_string().value());
    EXPECT_EQ(message.rfind("consumer 'orders-projection': the projection's ", 0), 0u) << message;
    EXPECT_NE(message.find(" reads /paymentReference of order.status.changed"), std::string::npos)
        << message;
    EXPECT_NE(message.find(contract), std::string::npos) << message;
  }
  EXPECT_EQ(undeclared, 2) << found.out;  // copy and defaults

  const auto refused = RunEvident({"consume", "--config", config, "--store",
                                   "sqlite:" + scratch.path() + "/s.db", "--input", "/dev/null"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("reads /paymentReference of order.status.changed, which its "
                             "contract (" +
                             contract + ") does not declare in reads"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(scratch.path() + "/s.db"));
  // The configuration must read the directory it is checked against.
  EXPECT_EQ(RunEvident({"contracts", "lint", SourcePath(kOrders), "--config", config}).exit_code,
            2);
}

TEST(CliContracts, ImpactWeighsWhatTheProjectionCopies) {
  Scratch scratch;
  std::ifstream in(SourcePath(kOrders + "/" + kType + "/v2.schema.json"));
  std::string v5((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = v5.find(R"("paymentReference": {"type": "string")");
  ASSERT_NE(at, std::string::npos) << v5;
  v5.replace(at, std::string(R"("paymentReference": {"type": "string")").size(),
             R"("paymentReference": {"type": "integer")");
  const auto r = RunEvident({"contracts", "impact", "--contracts", SourcePath(kOrders), "--type",
                             kType, "--schema", scratch.Write("v5.schema.json", v5)});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("orders-projection: contract-update-required"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/paymentReference"), std::string::npos) << r.out;
}

TEST(CliValidate, PrintSchemaPrintsTheProfilesEnvelopeAndReadsNoInput) {
  const auto r = RunEvident({"validate", "--print-schema", "--profile", "contract"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  const auto root = Parse(parser, r.out);
  EXPECT_EQ(std::string_view(root["$schema"].get_string().value()),
            "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(std::string_view(root["$id"].get_string().value()),
            "https://evident.dev/schemas/envelope/contract.json");
  EXPECT_EQ(RunEvident({"validate", "--print-schema", SourcePath("examples/envelopes/batch.json")})
                .exit_code,
            2);
  EXPECT_EQ(RunEvident({"validate", "--print-schema", "--boundary", "x"}).exit_code, 2);
}

TEST(CliContracts, LintUsageErrors) {
  EXPECT_EQ(RunEvident({"contracts", "lint"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"contracts", "lint", "/nonexistent/evident"}).exit_code, 2);
}

TEST(CliContracts, ImpactSafeForTheSeedV2) {
  const auto r = RunEvident(
      {"contracts", "impact", "--contracts", SourcePath(kOrders), "--type", kType, "--schema",
       SourcePath(kOrders + "/" + kType + "/v2.schema.json"), "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"type":"order.status.changed","consumers":[{"consumer":"orders-projection",)"
                   R"("verdict":"safe","reasons":[]}]})"
                   "\n");
}

TEST(CliContracts, ImpactOfTheRename) {
  Scratch scratch;
  const std::string v3 = scratch.Write("v3.schema.json", kV3Renamed);
  const auto r = RunEvident(
      {"contracts", "impact", "--contracts", SourcePath(kOrders), "--type", kType, "--schema", v3});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("orders-projection: contract-update-required"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/status  LIKELY_RENAME"), std::string::npos) << r.out;
  const auto json = RunEvident({"contracts", "impact", "--contracts", SourcePath(kOrders), "--type",
                                kType, "--schema", v3, "--format", "json"});
  simdjson::dom::parser parser;
  const auto root = Parse(parser, json.out);
  const auto consumer = root["consumers"].at(0);
  EXPECT_EQ(std::string_view(consumer["verdict"].get_string().value()), "contract-update-required");
  // Accepted versions 1 and 2 both had /status.
  EXPECT_EQ(consumer["reasons"].get_array().size(), 2u);
  EXPECT_EQ(std::string_view(consumer["reasons"].at(0)["pointer"].get_string().value()), "/status");
}

TEST(CliContracts, ImpactUsageErrors) {
  EXPECT_EQ(RunEvident({"contracts", "impact", "--contracts", SourcePath(kOrders), "--type", kType})
                .exit_code,
            2);
  EXPECT_EQ(RunEvident({"contracts", "impact", "--contracts", SourcePath(kOrders), "--type", kType,
                        "--schema", "/nonexistent.json"})
                .exit_code,
            2);
}

}  // namespace
}  // namespace evident::testing
