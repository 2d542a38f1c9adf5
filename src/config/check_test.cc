// CheckConfig (`evident config check`): every problem at once, at its line; the schema agrees with
// the code's limits; hostile documents are decided in bounded time.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "config/problem.h"
#include "evident/config.h"
#include "evident/contract.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

const std::string kContracts = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts";

class ConfigCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (fs::temp_directory_path() / "evident-config-check-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` as the configuration (its contracts are the orders example's) and checks it.
  std::vector<ConfigProblem> Check(const std::string& text) {
    const std::string path = dir_ + "/evident.yaml";
    std::ofstream(path) << text;
    return CheckConfig(path);
  }

  static std::string Describe(const std::vector<ConfigProblem>& problems) {
    std::string out;
    for (const ConfigProblem& p : problems) {
      out += p.file + ":" + std::to_string(p.line) + ": " + p.code + ": " + p.message + "\n";
    }
    return out;
  }

  // The problem at `line` whose message holds `words`, or null.
  static const ConfigProblem* At(const std::vector<ConfigProblem>& problems, int64_t line,
                                 const std::string& words) {
    for (const ConfigProblem& p : problems) {
      if (p.line == line && p.message.find(words) != std::string::npos) return &p;
    }
    return nullptr;
  }

  std::string dir_;
};

int64_t SchemaInt(simdjson::dom::element schema, std::string_view pointer) {
  int64_t n = -1;
  EXPECT_EQ(schema.at_pointer(pointer).get(n), simdjson::SUCCESS) << pointer;
  return n;
}

TEST(ConfigSchema, ItsRangesAreTheCodes) {
  simdjson::dom::parser parser;
  simdjson::dom::element schema;
  const std::string text(ConfigSchemaJson());
  ASSERT_EQ(parser.parse(text).get(schema), simdjson::SUCCESS);
  EXPECT_EQ(SchemaInt(schema, "/properties/batch_count_max/maximum"), kBatchCountMaxLimit);
  EXPECT_EQ(SchemaInt(schema, "/properties/linger_ms/maximum"), kLingerMsLimit);
  EXPECT_EQ(SchemaInt(schema, "/properties/batch_ms_max/maximum"), kBatchMsMaxLimit);
  EXPECT_EQ(SchemaInt(schema, "/properties/event_bytes_max/minimum"), kEventBytesFloor);
  EXPECT_EQ(SchemaInt(schema, "/properties/event_bytes_max/maximum"), kEventBytesLimit);
  EXPECT_EQ(SchemaInt(schema, "/$defs/effect/properties/target/properties/timeout_ms/maximum"),
            kEffectTimeoutMsLimit);
  EXPECT_EQ(SchemaInt(schema, "/$defs/gap/properties/deadline_seconds/maximum"),
            kGapDeadlineSecondsMax);
}

TEST_F(ConfigCheck, TheOrdersExampleIsClean) {
  const std::vector<ConfigProblem> problems =
      CheckConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
  EXPECT_TRUE(problems.empty()) << Describe(problems);
}

TEST_F(ConfigCheck, EveryProblemAtOnceEachAtItsLine) {
  const std::vector<ConfigProblem> problems =
      Check("contracts: " + kContracts +
            "\n"                                           // 1
            "linger_ms: 90000\n"                           // 2: above the range
            "batch_size: 10\n"                             // 3: unknown key
            "consumers:\n"                                 // 4
            "  - id: fulfillment\n"                        // 5
            "    projection:\n"                            // 6
            "      com.example.training.order.shipped:\n"  // 7: a type it does not accept
            "        state: shipped\n"                     // 8
            "    effects:\n"                               // 9
            "      - name: reserve-stock\n"                // 10
            "        on: com.example.training.order.paid\n"
            "        key: \"reserve:{subjekt}\"\n"  // 12: unknown placeholder
            "        target: {url: http://127.0.0.1:1/r}\n"
            "        retry: {attempts_max: 5000}\n"  // 14: above the range
            "    guards:\n"
            "      ship: {in_sync: true, when: paid}\n");  // 16: unknown key
  EXPECT_NE(At(problems, 2, "linger_ms"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 3, "batch_size"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 7, "com.example.training.order.shipped"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 12, "subjekt"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 14, "attempts_max"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 16, "when"), nullptr) << Describe(problems);
  EXPECT_EQ(problems.size(), 6u) << Describe(problems);
  for (const ConfigProblem& p : problems) EXPECT_EQ(p.file, dir_ + "/evident.yaml");
}

TEST_F(ConfigCheck, WhatOnlyTheParseSeesIsReportedTooAndNothingTwice) {
  const std::vector<ConfigProblem> problems =
      Check("contracts: " + kContracts +
            "\n"
            "consumers:\n"
            "  - id: fulfillment\n"
            "    effects:\n"
            "      - {name: a, on: com.example.training.order.paid, key: \"k:{subject}\",\n"  // 5
            "         target: {url: http://127.0.0.1:1/a}}\n"
            "      - {name: b, on: com.example.training.order.paid, key: \"k:{subject}\",\n"  // 7
            "         target: {url: http://127.0.0.1:1/b}}\n"
            "      - {name: c, key: \"c:{subject}\", target: {url: http://127.0.0.1:1/c}}\n"  // 9
            "    compensations:\n"
            "      - {on: com.example.training.order.cancelled, key: \"x:{subject}\",\n"  // 11
            "         compensates: nowhere}\n"                                            // 12
            "  - id: fulfillment\n");                                                     // 13
  // The same key template twice, an effect nothing intends, a compensation of an unknown effect,
  // and a consumer listed twice: none is the schema's to see.
  EXPECT_NE(At(problems, 0, "has the key template 'k:{subject}'"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 12, "'nowhere'"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 5, "nothing would ever intend it"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 13, "listed twice"), nullptr) << Describe(problems);
  EXPECT_EQ(problems.size(), 4u) << Describe(problems);
  for (const ConfigProblem& p : problems) EXPECT_EQ(p.code, "CONFIG_INVALID") << p.message;
}

TEST_F(ConfigCheck, EachUndeclaredReadIsOneProblemInTheFileOfItsContract) {
  const std::vector<ConfigProblem> problems =
      Check("contracts: " + kContracts +
            "\n"
            "consumers:\n"
            "  - id: fulfillment\n"
            "    projection:\n"
            "      com.example.training.order.paid: {state: paid, copy: [/orderId, /amount, "
            "/currency]}\n");
  ASSERT_EQ(problems.size(), 2u) << Describe(problems);
  for (const ConfigProblem& p : problems) {
    EXPECT_EQ(p.code, "UNDECLARED_READ");
    EXPECT_EQ(p.file, kContracts + "/consumers/fulfillment.yaml");
  }
  EXPECT_NE(problems[0].message.find("/amount"), std::string::npos) << Describe(problems);
  EXPECT_NE(problems[1].message.find("/currency"), std::string::npos) << Describe(problems);
}

TEST_F(ConfigCheck, TheContractsDirectoryIsLintedToo) {
  const std::string contracts = dir_ + "/contracts";
  fs::copy(kContracts, contracts, fs::copy_options::recursive);
  std::ofstream(contracts + "/consumers/stray.yaml")
      << "id: stray\naccepts:\n  - type: com.example.nowhere\n    versions: [1]\n";
  const std::vector<ConfigProblem> problems = Check(
      "contracts: contracts\nconsumers:\n  - id: fulfillment\n    projection:\n"
      "      com.example.training.order.paid: {state: paid}\n");
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, "UNKNOWN_TYPE") << Describe(problems);
  EXPECT_EQ(problems[0].file, contracts + "/consumers/stray.yaml");
}

TEST_F(ConfigCheck, NotYamlIsOneProblemAtItsLine) {
  std::vector<ConfigProblem> problems = Check("contracts: x\nconsumers:\n  - id: [a\n");
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, "CONFIG_SYNTAX");
  EXPECT_GT(problems[0].line, 0);
  problems = Check("contracts: x\nlinger_ms: 1\nlinger_ms: 2\n");
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, "CONFIG_SYNTAX");
  EXPECT_EQ(problems[0].line, 3);
  EXPECT_NE(problems[0].message.find("duplicate key 'linger_ms'"), std::string::npos);
}

TEST_F(ConfigCheck, AMissingContractsDirectoryIsNamedAtItsLine) {
  const std::vector<ConfigProblem> problems =
      Check("linger_ms: 5\ncontracts: nowhere\nconsumers:\n  - id: fulfillment\n");
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].line, 2);
  EXPECT_NE(problems[0].message.find("no contracts directory at " + dir_ + "/nowhere"),
            std::string::npos)
      << Describe(problems);
  // Not a mapping at all: the schema says so, once.
  EXPECT_EQ(Check("").size(), 1u);
  EXPECT_EQ(Check("- a\n- b\n").size(), 1u);
}

TEST_F(ConfigCheck, AnUnreadableFileIsOneProblem) {
  const std::vector<ConfigProblem> problems = CheckConfig(dir_ + "/missing.yaml");
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, "CONFIG_UNREADABLE");
}

// Nine levels of ten aliases each name 10^9 values in a few hundred bytes: the check says so
// instead of expanding them.
TEST_F(ConfigCheck, AnAliasBombIsOneProblemDecidedInBoundedTime) {
  std::string text = "contracts: " + kContracts + "\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 10; ++level) {
    const std::string prev = "*l" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i > 0 ? ", " : "") + prev;
    text += "]\n";
  }
  text += "consumers: [{id: fulfillment}]\n";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ConfigProblem> problems = Check(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);  // a bound, not a benchmark: the expansion would take hours
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);  // nothing of it is parsed further
  // Refused as it is loaded (LoadYaml measures what aliases expand to), as consume refuses it.
  EXPECT_NE(At(problems, 0, "expands (through its aliases) to more than 64 MiB"), nullptr)
      << Describe(problems);
}

// Few values, but each alias of a 1 MiB string is the whole string again: bounded by bytes.
TEST_F(ConfigCheck, ALargeScalarRepeatedByAliasesIsOneProblem) {
  std::string text =
      "contracts: " + kContracts + "\nbig: &b \"" + std::string(1 << 20, 'x') + "\"\nmany: [";
  for (int i = 0; i < 5000; ++i) text += (i > 0 ? ",*b" : "*b");
  text += "]\nconsumers: [{id: fulfillment}]\n";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ConfigProblem> problems = Check(text);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_NE(problems[0].message.find("64 MiB"), std::string::npos) << Describe(problems);
}

// A missing member is its object's problem: other problems on that object's line still show.
TEST_F(ConfigCheck, AMissingMemberHidesNothingElseOnItsLine) {
  const std::vector<ConfigProblem> problems = Check("contracts: nowhere\nlinger_ms: 5\n");
  EXPECT_NE(At(problems, 1, "consumers"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 1, "no contracts directory"), nullptr) << Describe(problems);
}

// `retention:`: one horizon for every kind, or one per kind named (the others kept); the
// archive resolved against the file's directory.
TEST_F(ConfigCheck, RetentionReadsOneHorizonOrOnePerKind) {
  const std::string path = dir_ + "/evident.yaml";
  const std::string head = "contracts: " + kContracts + "\nconsumers:\n  - id: fulfillment\n";
  std::ofstream(path) << head << "retention: {every: 15m, older_than: 30d}\n";
  Result<Config> all = LoadConfig(path);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->retention.every_ms, 15 * 60'000);
  for (const int64_t ms : all->retention.older_than_ms) EXPECT_EQ(ms, int64_t{30} * 86'400'000);
  EXPECT_TRUE(all->retention.archive.empty());
  EXPECT_EQ(all->retention.batch_count_max, 500);

  std::ofstream(path)
      << head
      << "retention:\n  every: 1h\n  older_than: {journal: 7d, outbox: 12h, ledger: 90d}\n"
         "  archive: retained.ndjson\n  batch_count_max: 50\n";
  Result<Config> some = LoadConfig(path);
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  const auto horizon = [&](RetainedKind kind) {
    return some->retention.older_than_ms[static_cast<size_t>(kind)];
  };
  EXPECT_EQ(horizon(RetainedKind::kJournal), int64_t{7} * 86'400'000);
  EXPECT_EQ(horizon(RetainedKind::kOutbox), 12 * 3'600'000);
  EXPECT_EQ(horizon(RetainedKind::kLedger), int64_t{90} * 86'400'000);
  EXPECT_EQ(horizon(RetainedKind::kQuarantine), 0);  // not named: kept
  EXPECT_EQ(horizon(RetainedKind::kGap), 0);
  EXPECT_EQ(horizon(RetainedKind::kEffectLog), 0);
  EXPECT_EQ(some->retention.archive, dir_ + "/retained.ndjson");
  EXPECT_EQ(some->retention.batch_count_max, 50);

  std::ofstream(path) << head;  // no section: nothing runs
  EXPECT_EQ(std::move(LoadConfig(path)).value().retention.every_ms, 0);
}

TEST_F(ConfigCheck, RetentionProblemsAreEachAtTheirLine) {
  const std::vector<ConfigProblem> problems =
      Check("contracts: " + kContracts +
            "\n"
            "consumers:\n"
            "  - id: fulfillment\n"
            "retention:\n"           // 4
            "  every: 0s\n"          // 5: not longer than 0
            "  older_than:\n"        // 6
            "    journal: 7 days\n"  // 7: not a duration
            "    deferred: 1d\n"     // 8: a kind retention never removes
            "  keep: forever\n"      // 9: unknown key
            "  archive:\n");         // 10: no path (YAML null)
  EXPECT_NE(At(problems, 5, "every"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 7, "journal"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 8, "deferred"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 9, "keep"), nullptr) << Describe(problems);
  EXPECT_NE(At(problems, 10, "archive"), nullptr) << Describe(problems);
  EXPECT_EQ(At(problems, 6, ""), nullptr) << "a mapping of kinds is no problem\n"
                                          << Describe(problems);
  const std::vector<ConfigProblem> missing = Check(
      "contracts: " + kContracts + "\nconsumers:\n  - id: fulfillment\nretention: {every: 1h}\n");
  EXPECT_FALSE(missing.empty());
  EXPECT_NE(Describe(missing).find("older_than"), std::string::npos) << Describe(missing);
}

TEST(ConfigProblemFromMessage, SplitsFileLineAndWords) {
  ConfigProblem p = config::ProblemFromMessage("C", "a.yaml", "a.yaml:12: bad thing");
  EXPECT_EQ(p.file, "a.yaml");
  EXPECT_EQ(p.line, 12);
  EXPECT_EQ(p.message, "bad thing");
  p = config::ProblemFromMessage("C", "a.yaml", "b/c.yaml:3: other: words");
  EXPECT_EQ(p.file, "b/c.yaml");
  EXPECT_EQ(p.line, 3);
  EXPECT_EQ(p.message, "other: words");
  p = config::ProblemFromMessage("C", "a.yaml", "a.yaml: yaml-cpp: error at line 4, column 2: x");
  EXPECT_EQ(p.line, 4);
  p = config::ProblemFromMessage("C", "a.yaml", "no place at all");
  EXPECT_EQ(p.file, "a.yaml");
  EXPECT_EQ(p.line, 0);
  EXPECT_EQ(p.message, "no place at all");
}

}  // namespace
}  // namespace evident
