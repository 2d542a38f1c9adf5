#include "evident/contract.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "contract/contract_yaml.h"

namespace evident {
namespace {

constexpr std::string_view kOrdersProjection = R"(
id: orders-projection
resultversion: 1
boundary: ["training://orders/"]
schemaversion_at: /data/schemaVersion
unknown_version: contract-update-required
accepts:
  - type: order.status.changed
    versions: [2, 1]
    reads: [/orderId, /status]
ordering: none
)";

constexpr std::string_view kFulfillment = R"(
id: fulfillment
boundary: https://example.test/order-service
accepts:
  - {type: com.example.training.order.paid, versions: 1, reads: [/orderId, /orderVersion]}
  - {type: com.example.training.order.cancelled, versions: [1], reads: [/orderId, /reason]}
ordering: {by: subject, version_at: /data/orderVersion}
gap: {deadline_seconds: 60, route: request-replay}
)";

TEST(Contract, ParsesTheOrdersProjection) {
  auto c = ConsumerContractFromYaml(kOrdersProjection);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->id, "orders-projection");
  EXPECT_EQ(c->result_version, 1);
  EXPECT_EQ(c->boundary, std::vector<std::string>{"training://orders/"});
  EXPECT_EQ(c->schema_version_at, "/data/schemaVersion");
  ASSERT_EQ(c->accepts.size(), 1u);
  EXPECT_EQ(c->accepts[0].versions, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c->accepts[0].reads, (std::vector<std::string>{"/orderId", "/status"}));
  EXPECT_TRUE(c->Accepts("order.status.changed", 2));
  EXPECT_FALSE(c->Accepts("order.status.changed", 3));
  EXPECT_FALSE(c->Accepts("order.created", 1));
  EXPECT_FALSE(c->ordering.by_subject);
}

TEST(Contract, ParsesOrderingAndGap) {
  auto c = ConsumerContractFromYaml(kFulfillment);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->ordering.by_subject);
  EXPECT_EQ(c->ordering.version_at, "/data/orderVersion");
  EXPECT_TRUE(c->ordering.subject_at.empty());
  EXPECT_EQ(c->gap.deadline_seconds, 60);
  EXPECT_EQ(c->gap.route, GapRoute::kRequestReplay);
  EXPECT_EQ(GapRouteName(c->gap.route), "request-replay");
  EXPECT_NE(c->Find("com.example.training.order.cancelled"), nullptr);
  EXPECT_EQ(c->ordering.start, Ordering::Start::kOne);  // the default
  for (const char* start : {"1", "first-seen"}) {
    auto late = ConsumerContractFromYaml(
        std::string("id: a\naccepts: [{type: t, versions: 1}]\nordering: {by: subject, start: ") +
        start + "}");
    ASSERT_TRUE(late.ok()) << late.status().ToString();
    EXPECT_EQ(late->ordering.start,
              std::string(start) == "1" ? Ordering::Start::kOne : Ordering::Start::kFirstSeen);
  }
}

TEST(Contract, RejectsMalformedContractsWithWhereAndWhy) {
  struct Case {
    const char* yaml;
    const char* expected;
  };
  for (const Case& c : {
           Case{"accepts: []", "needs 'id'"},
           Case{"id: a\n", "'accepts' must list"},
           Case{"id: a\naccepts: [{type: t}]", "needs 'versions'"},
           Case{"id: a\naccepts: [{type: t, versions: [x]}]", "must be an integer"},
           Case{"id: a\naccepts: [{type: t, versions: [1, 1]}]", "twice"},
           Case{"id: a\naccepts: [{type: t, versions: [0]}]", "start at 1"},
           Case{"id: a\naccepts: [{type: t, versions: 1, reads: [orderId]}]", "JSON Pointer"},
           Case{"id: a\naccepts: [{type: t, versions: 1}, {type: t, versions: 2}]", "listed twice"},
           Case{"id: a\naccepts: [{type: t, versions: 1}]\nordering: {by: time}", "ordering.by"},
           Case{"id: a\naccepts: [{type: t, versions: 1}]\ngap: {route: retry}", "gap.route"},
           Case{"id: a\naccepts: [{type: t, versions: 1}]\nordering: {by: subject, start: 2}",
                "'ordering.start' must be 1 or first-seen"},
           Case{"id: a\naccepts: [{type: t, versions: 1}]\nordering: {by: subject, start: []}",
                "'ordering.start' must be 1 or first-seen"},
           Case{"id: a\naccepts: [{type: t, versions: 1}]\ncolour: red", "unknown key 'colour'"},
           Case{"id: 'a:b'\naccepts: [{type: t, versions: 1}]", "without ':'"},
           Case{"id: a\naccepts: [{type: t, versions: 1}", "yaml"},
       }) {
    auto result = ConsumerContractFromYaml(c.yaml, "yaml");
    ASSERT_FALSE(result.ok()) << c.yaml;
    EXPECT_NE(result.status().message().find(c.expected), std::string::npos)
        << c.yaml << " -> " << result.status().message();
  }
}

// YAML keeps both pairs of a repeated key and lookups return the first: an empty boundary
// followed by a real one would let any source through. A repeated key is refused, at any depth,
// with both lines; an alias still reads as the node it names.
TEST(Contract, RefusesADuplicateKeyWithBothLines) {
  ContractProblem problem = ContractProblem::kNone;
  auto twice = ConsumerContractFromYaml(
      "id: a\nboundary: []\naccepts: [{type: t, versions: 1}]\nboundary: "
      "[\"training://orders/\"]\n",
      "c.yaml", &problem);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(twice.status().message(),
            "c.yaml:4: duplicate key 'boundary' at line 4 (first at line 2)");
  EXPECT_EQ(problem, ContractProblem::kDuplicateKey);

  auto nested = ConsumerContractFromYaml(
      "id: a\naccepts:\n  - type: t\n    versions: [1]\n    \"versions\": [2]\n", "c.yaml",
      &problem);
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message(),
            "c.yaml:5: duplicate key 'versions' at line 5 (first at line 4)");

  auto other = ConsumerContractFromYaml("id: a\n", "c.yaml", &problem);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(problem, ContractProblem::kInvalid);

  auto aliased = ConsumerContractFromYaml(
      "id: a\naccepts:\n  - &entry {type: t, versions: [1]}\nordering: none\n"
      "gap: {deadline_seconds: 60}\nboundary: [&b \"training://orders/\", *b]\n",
      "c.yaml", &problem);
  ASSERT_TRUE(aliased.ok()) << aliased.status().ToString();
  EXPECT_EQ(problem, ContractProblem::kNone);
  EXPECT_EQ(aliased->boundary.size(), 2u);
}

// Aliases are walked once: a "billion laughs" document is checked in linear time, and a
// mapping reached through many aliases is still checked (its duplicate found once).
TEST(Contract, DuplicateKeyCheckIsLinearInAliasedDocuments) {
  std::string yaml = "a0: &a0 [x, x]\n";
  for (int i = 1; i < 40; ++i) {
    // Appended piece by piece: `"a" + std::to_string(i)` trips GCC 12's -Wrestrict (a false
    // positive in libstdc++'s inlined insert, GCC bug 105329), and the build has -Werror.
    const std::string prev = std::string("*a").append(std::to_string(i - 1));
    yaml.append("a").append(std::to_string(i)).append(": &a").append(std::to_string(i));
    yaml.append(" [").append(prev).append(", ").append(prev).append("]\n");
  }
  EXPECT_TRUE(CheckUniqueKeys(YAML::Load(yaml), "laughs.yaml").ok());
  const Status found =
      CheckUniqueKeys(YAML::Load("m: &m {k: 1, k: 2}\nuse: [*m, *m, *m]\n"), "m.yaml");
  EXPECT_EQ(found.message(), "m.yaml:1: duplicate key 'k' at line 1 (first at line 1)");
}

TEST(Contract, LoadsADirectory) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("evident-contracts-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "order.status.changed");
  fs::create_directories(dir / "consumers");
  std::ofstream(dir / "order.status.changed" / "v1.schema.json") << "{}";
  std::ofstream(dir / "order.status.changed" / "v2.schema.json") << "{}";
  std::ofstream(dir / "order.status.changed" / "notes.txt") << "ignored";
  std::ofstream(dir / "consumers" / "orders-projection.yaml") << kOrdersProjection;
  fs::create_directories(dir / ".git");  // the repository's: no type
  std::ofstream(dir / ".git" / "v1.schema.json") << "{}";
  auto loaded = LoadContractsDir(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->schemas.size(), 1u);
  EXPECT_EQ(loaded->schemas.at("order.status.changed").size(), 2u);
  EXPECT_NE(loaded->SchemaPath("order.status.changed", 2), "");
  EXPECT_EQ(loaded->SchemaPath("order.status.changed", 3), "");
  ASSERT_EQ(loaded->consumers.size(), 1u);
  std::ofstream(dir / "consumers" / "bad.yaml") << "id: x\n";
  EXPECT_FALSE(LoadContractsDir(dir.string()).ok());
  EXPECT_FALSE(LoadContractsDir((dir / "missing").string()).ok());
  fs::remove_all(dir);
}

// A name that is no contract and a dangling link, as the std::filesystem walk treated them:
// skipped, and unreadable (never "no directory"). (A directory that cannot be listed is skipped
// too; as root, which the tests may run as, every directory can be listed.)
TEST(Contract, LoadingSkipsWhatIsNoContractAndCallsADanglingLinkUnreadable) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("evident-contracts-odd-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "consumers");
  std::ofstream(dir / "consumers" / "orders-projection.yaml") << kOrdersProjection;
  std::ofstream(dir / "consumers" / ".yaml") << "not: a contract\n";  // no extension
  auto loaded = LoadContractsDir(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->consumers.size(), 1u);
  fs::create_symlink(dir / "nowhere.yaml", dir / "consumers" / "dangling.yaml");
  loaded = LoadContractsDir(dir.string());
  EXPECT_EQ(loaded.status().code(), Code::kIoError) << loaded.status().ToString();
  fs::remove_all(dir);
}

TEST(Contract, SchemaFileNames) {
  EXPECT_EQ(SchemaVersionOfFileName("v1.schema.json"), 1);
  EXPECT_EQ(SchemaVersionOfFileName("v012.schema.json"), 12);
  EXPECT_EQ(SchemaVersionOfFileName("v0.schema.json"), 0);  // a lint finding, not a skip
  EXPECT_EQ(SchemaVersionOfFileName("v999999999.schema.json"), 999999999);
  for (const char* name :
       {"v1234567890.schema.json", "v.schema.json", "v1.json", "V1.schema.json", "1.schema.json",
        "v1a.schema.json", "v-1.schema.json", "v1.schema.jsonx", ".schema.json", ""}) {
    EXPECT_EQ(SchemaVersionOfFileName(name), -1) << name;
  }
}

// A consumer contract file over kContractBytesMax is refused, not read whole.
TEST(Contract, RefusesAnOversizedContractFile) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("evident-contracts-big-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "consumers");
  {
    std::ofstream out(dir / "consumers" / "big.yaml");
    out << kOrdersProjection << "\n# " << std::string(kContractBytesMax, 'x') << "\n";
  }
  const auto loaded = LoadContractsDir(dir.string());
  EXPECT_EQ(loaded.status().code(), Code::kLimitExceeded) << loaded.status().ToString();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace evident
