// Runs the official JSON-Schema-Test-Suite (third_party/json-schema-test-suite) for draft
// 2020-12 and draft 7, prints pass counts per draft and category, and fails when a required
// test fails (unless listed in kExceptions) or an optional one does (format assertion on for
// optional/format) unless listed in kOptionalExceptions, and when a listed test passes: the
// lists hold exactly the known failures, each explained in docs/json-schema.md.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "evident/schema.h"
#include "json/files.h"
#include "schema/plan.h"

namespace evident::schema {
namespace {

namespace fs = std::filesystem;

const std::string kSuite = std::string(EVIDENT_SOURCE_DIR) + "/third_party/json-schema-test-suite";

// Required tests allowed to fail: "draft|file|case|test". Each one is explained in
// docs/json-schema.md. The goal is none.
const std::set<std::string> kExceptions = {};

// Optional tests known to fail, "draft|file|case|test" (or "draft|file|<file does not parse>").
const std::set<std::string> kOptionalExceptions = {
    // simdjson refuses integers beyond 64 bits, so the file does not load.
    "draft2020-12|bignum.json|<file does not parse>",
    "draft7|bignum.json|<file does not parse>",
    // A $ref to a draft 2019-09 document is processed with 2020-12 rules.
    "draft2020-12|cross-draft.json|refs to historic drafts are processed as historic "
    "drafts|first item not a string is valid",
    // contentMediaType and contentEncoding are annotations, as in 2020-12; draft 7 allowed
    // asserting them.
    "draft7|content.json|validation of string-encoded content based on media type|an invalid "
    "JSON document",
    "draft7|content.json|validation of binary string-encoding|an invalid base64 string (% is not "
    "a valid character)",
    "draft7|content.json|validation of binary-encoded media type documents|a validly-encoded "
    "invalid JSON document",
    "draft7|content.json|validation of binary-encoded media type documents|an invalid base64 "
    "string that is valid JSON",
    // The full IDNA2008 derived-property and Bidi tables are not embedded.
    "draft2020-12|idn-hostname.json|validation of internationalized host names|right-to-left "
    "label mixing both digit types is invalid",
    "draft2020-12|idn-hostname.json|validation of internationalized host names|A-label that "
    "decodes to a disallowed code point is invalid",
    "draft7|idn-hostname.json|validation of internationalized host names|right-to-left label "
    "mixing both digit types is invalid",
    "draft7|idn-hostname.json|validation of internationalized host names|A-label that decodes to "
    "a disallowed code point is invalid",
};

// The error Validate reports when its collecting pass found an instance invalid but recorded
// no reason (src/schema/validate.cc); a test whose only error is this one fails.
constexpr std::string_view kNoReason = "instance is invalid";

struct Counts {
  size_t passed = 0;
  size_t failed = 0;
  std::vector<std::string> failures;
};

// The schema once more with memoization from the first step (it normally starts after
// internal::kMemoStepsMinDefault steps, which no suite instance takes): results must not change.
std::shared_ptr<const Schema> MemoizingSchema(const std::string& json, const Registry& registry,
                                              const CompileOptions& options) {
  auto plan = internal::CompilePlan(json, registry, options, "");
  if (!plan.ok()) return nullptr;
  (*plan)->memo_steps_min = 0;
  return std::make_shared<const Schema>(std::move(plan).value());
}

std::vector<fs::path> JsonFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

void RunFile(const std::string& draft, const fs::path& file, Dialect dialect, bool format_assertion,
             Counts& counts) {
  Registry registry;
  ASSERT_TRUE(registry.AddDirectory("http://localhost:1234/", kSuite + "/remotes").ok());
  CompileOptions options;
  options.default_dialect = dialect;
  options.format_assertion = format_assertion;
  auto text = ReadFileToString(file.string(), 64u << 20);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const std::string name = file.filename().string();
  if (auto error = parser.parse(*text).get(root); error) {
    // simdjson rejects some numbers (integers beyond 64 bits) in a few optional files.
    counts.failed += 1;
    counts.failures.push_back(draft + "|" + name + "|<file does not parse>  (" +
                              simdjson::error_message(error) + ")");
    return;
  }
  for (simdjson::dom::element test_case : root.get_array()) {
    std::string_view description = test_case["description"].get_string().value();
    const std::string schema_json = simdjson::minify(test_case["schema"].value());
    auto schema = Schema::Compile(schema_json, registry, options);
    const auto memoizing = MemoizingSchema(schema_json, registry, options);
    for (simdjson::dom::element test : test_case["tests"].get_array()) {
      std::string_view test_description = test["description"].get_string().value();
      const bool expected = test["valid"].get_bool().value();
      const std::string id =
          draft + "|" + name + "|" + std::string(description) + "|" + std::string(test_description);
      bool ok = false;
      std::string detail;
      if (!schema.ok()) {
        detail = "compile: " + schema.status().ToString();
      } else {
        const bool fast = (*schema)->IsValid(test["data"].value());
        const Output output = (*schema)->Validate(test["data"].value());
        // An invalid instance must come with a reason of its own: Validate's stand-in error
        // ("instance is invalid", when the collecting pass recorded nothing) does not count.
        const bool explained =
            output.valid || std::any_of(output.errors.begin(), output.errors.end(),
                                        [](const Error& e) { return e.error != kNoReason; });
        const bool memoized = memoizing->IsValid(test["data"].value()) == fast &&
                              memoizing->Validate(test["data"].value()).valid == output.valid;
        ok = fast == expected && output.valid == expected && explained && memoized;
        if (!ok) {
          detail = std::string("expected ") + (expected ? "valid" : "invalid") + ", IsValid " +
                   (fast ? "valid" : "invalid") + ", Validate " +
                   (output.valid ? "valid" : "invalid") + (explained ? "" : " without a reason") +
                   (memoized ? "" : ", memoized differs");
        }
      }
      if (ok) {
        ++counts.passed;
      } else {
        ++counts.failed;
        counts.failures.push_back(id + "  (" + detail + ")");
      }
    }
  }
}

Counts RunDirectory(const std::string& draft, const fs::path& dir, Dialect dialect,
                    bool format_assertion) {
  Counts counts;
  for (const fs::path& file : JsonFiles(dir)) {
    RunFile(draft, file, dialect, format_assertion, counts);
  }
  return counts;
}

void Report(const std::string& label, const Counts& counts) {
  const size_t total = counts.passed + counts.failed;
  std::printf(
      "[suite] %-32s %5zu / %5zu passed (%.1f%%)\n", label.c_str(), counts.passed, total,
      total == 0 ? 100.0 : 100.0 * static_cast<double>(counts.passed) / static_cast<double>(total));
  for (const std::string& failure : counts.failures) {
    std::printf("[suite]   FAIL %s\n", failure.c_str());
  }
}

// Every failure of `draft` is listed in `exceptions`, and every listed test of `draft` failed.
void ExpectExactly(const std::string& draft, const std::string& category, const Counts& counts,
                   const std::set<std::string>& exceptions) {
  std::set<std::string> failed;
  for (const std::string& failure : counts.failures) {
    const std::string id = failure.substr(0, failure.find("  ("));
    failed.insert(id);
    EXPECT_TRUE(exceptions.contains(id)) << category << " test failed: " << failure;
  }
  for (const std::string& id : exceptions) {
    if (id.starts_with(draft + "|")) {
      EXPECT_TRUE(failed.contains(id)) << "listed as a known failure but passes (remove it from "
                                          "the list and from docs/json-schema.md): "
                                       << id;
    }
  }
}

void RunDraft(const std::string& draft, Dialect dialect) {
  const fs::path tests = fs::path(kSuite) / "tests" / draft;
  ASSERT_TRUE(fs::exists(tests)) << tests;
  const Counts required = RunDirectory(draft, tests, dialect, false);
  const Counts optional = RunDirectory(draft, tests / "optional", dialect, false);
  const Counts format = RunDirectory(draft, tests / "optional" / "format", dialect, true);
  Report(draft + " required", required);
  Report(draft + " optional (not format)", optional);
  Report(draft + " optional/format (asserting)", format);
  ASSERT_GT(optional.passed, 0u);
  ASSERT_GT(format.passed, 0u);
  ExpectExactly(draft, "required", required, kExceptions);
  Counts all_optional = optional;
  all_optional.failures.insert(all_optional.failures.end(), format.failures.begin(),
                               format.failures.end());
  ExpectExactly(draft, "optional", all_optional, kOptionalExceptions);
}

TEST(JsonSchemaTestSuite, Draft2020_12) { RunDraft("draft2020-12", Dialect::kDraft2020_12); }
TEST(JsonSchemaTestSuite, Draft7) { RunDraft("draft7", Dialect::kDraft7); }

}  // namespace
}  // namespace evident::schema
