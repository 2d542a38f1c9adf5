// Seed 000 in full, through the pipeline and a real SQLite store: its envelope as the `contract`
// profile, version adapters with their own check, explicit defaults, and what each receipt wrote.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "evident/adapter.h"
#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/store_sqlite.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNow = 1'785'000'000'000;

// order.status.changed v1 reads {orderId, status, amount?}; v2 renamed status to state, keeps the
// amount in minor units as amountMinor and has a legacy member v1 forbids; v3 is v2 with a
// note. v1 is closed (additionalProperties: false), so an adapter must drop what v1 lacks.
constexpr const char* kV1 = R"({"type":"object","required":["schemaVersion","orderId","status"],
  "additionalProperties":false,
  "properties":{"schemaVersion":{"const":1},"orderId":{"type":"string"},
  "status":{"enum":["paid","packed","delivered"]},"amount":{"type":"number"},
  "paymentReference":{"type":"string"},"orderVersion":{"type":"integer"}}})";
constexpr const char* kV2 = R"({"type":"object","required":["schemaVersion","orderId","state"],
  "properties":{"schemaVersion":{"const":2},"orderId":{"type":"string"},
  "state":{"enum":["paid","packed","done"]},"amountMinor":{"type":"integer"},
  "legacy":{"type":"integer"},"orderVersion":{"type":"integer"}},
  "examples":[{"schemaVersion":2,"orderId":"o-1","state":"done","amountMinor":1234,"legacy":7}]})";
constexpr const char* kV3 = R"({"type":"object","required":["schemaVersion","orderId","state"],
  "properties":{"schemaVersion":{"const":3},"orderId":{"type":"string"},
  "state":{"enum":["paid","packed","done"]},"note":{"type":"string"},
  "orderVersion":{"type":"integer"}}})";

// Every step kind: rename state back to status, set the version, map its values, convert the
// minor units, drop what v1 forbids.
constexpr const char* kAdapter21 = R"(id: a21
type: order.status.changed
from: 2
to: 1
steps:
  - move: {from: /state, to: /status, required: true}
  - set: {at: /schemaVersion, value: 1}
  - map: {at: /status, values: {done: delivered}, unmapped: keep}
  - convert: {at: /amountMinor, factor: 0.01, round: half-even, digits: 2}
  - move: {from: /amountMinor, to: /amount}
  - drop: /legacy
)";
constexpr const char* kAdapter32 = R"(id: a32
type: order.status.changed
from: 3
to: 2
steps:
  - drop: /note
  - set: {at: /schemaVersion, value: 2}
)";

class Seed000Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-seed000-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    Write("contracts/order.status.changed/v1.schema.json", kV1);
    Write("contracts/order.status.changed/v2.schema.json", kV2);
    Write("contracts/order.status.changed/v3.schema.json", kV3);
    Write("contracts/adapters/a21.yaml", kAdapter21);
    Write("contracts/adapters/a32.yaml", kAdapter32);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void Write(const std::string& relative, std::string_view text) {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  // A configuration with one consumer `p` of order.status.changed: the accepts entry's extra
  // lines (`via_adapter`), the projection step's extra lines, and the profile.
  Result<Config> Load(const std::string& via, const std::string& step = "",
                      const std::string& profile = "cloudevents",
                      const std::string& ordering = "ordering: none") {
    const std::string yaml = "contracts: contracts\nprofile: " + profile +
                             "\nconsumers:\n  - id: p\n    resultversion: 1\n"
                             "    schemaversion_at: /data/schemaVersion\n    accepts:\n"
                             "      - type: order.status.changed\n        versions: [1]\n"
                             "        reads: [/orderId, /status, /amount, /paymentReference, "
                             "/customer]\n" +
                             via + "    " + ordering +
                             "\n    projection:\n      order.status.changed:\n"
                             "        state_from: /status\n" +
                             (step.find("copy:") == std::string::npos
                                  ? "        copy: [/orderId, /amount, /paymentReference]\n"
                                  : "") +
                             step;
    return ConfigFromYaml(yaml, dir_.string());
  }
  void Start(const std::string& via, const std::string& step = "",
             const std::string& profile = "cloudevents",
             const std::string& ordering = "ordering: none") {
    auto config = Load(via, step, profile, ordering);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = std::move(config).value();
    auto pipeline = Pipeline::Create(config_);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();
    pipeline_ = std::move(pipeline).value();
    auto store = OpenSqliteStore((dir_ / "store.db").string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  Decision Run(const std::string& event) {
    std::vector<Decision> decisions;
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok());
    EXPECT_TRUE(pipeline_->Process(**tx, event, index_++, kNow, decisions).ok());
    EXPECT_TRUE((*tx)->Commit().ok());
    EXPECT_EQ(decisions.size(), 1u) << event;
    return decisions.empty() ? Decision{} : decisions.back();
  }
  LedgerEntry Receipt(const std::string& id) {
    auto snapshot = store_->Read();
    EXPECT_TRUE(snapshot.ok());
    auto found = (*snapshot)->FindLedger("p", "training://orders/checkout", id);
    EXPECT_TRUE(found.ok() && found->has_value()) << id;
    return found.ok() && found->has_value() ? **found : LedgerEntry{};
  }
  Projection ProjectionOf(const std::string& subject) {
    auto snapshot = store_->Read();
    EXPECT_TRUE(snapshot.ok());
    auto found = (*snapshot)->FindProjection("p", subject);
    EXPECT_TRUE(found.ok() && found->has_value()) << subject;
    return found.ok() && found->has_value() ? **found : Projection{};
  }
  static std::string Event(const std::string& id, const std::string& data,
                           const std::string& subject = "order-104") {
    return R"({"specversion":"1.0","id":")" + id +
           R"(","source":"training://orders/checkout","type":"order.status.changed","subject":")" +
           subject + R"(","data":)" + data + "}";
  }

  fs::path dir_;
  Config config_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Store> store_;
  int64_t index_ = 0;
};

TEST_F(Seed000Test, TheSeedsOwnEventAppliesUnderTheContractProfile) {
  Start("", "", "contract");
  const std::string seed =
      R"({"contractVersion":1,"id":"evt-104","source":"training://orders/checkout",)"
      R"("type":"order.status.changed","subject":"order-104","occurredAt":"2026-07-31T12:00:00Z",)"
      R"("data":{"schemaVersion":1,"orderId":"order-104","status":"paid"}})";
  const Decision d = Run(seed);
  EXPECT_EQ(d.outcome, Outcome::kApplied) << d.reason << " " << d.message;
  EXPECT_EQ(d.key, "p:training://orders/checkout:evt-104");
  EXPECT_EQ(ProjectionOf("order-104").state, "paid");
  std::string missing = seed;
  missing.replace(missing.find(R"("contractVersion":1,)"), 20, "");
  const Decision refused = Run(missing);
  EXPECT_EQ(refused.outcome, Outcome::kRejected);
  EXPECT_EQ(refused.reason, "missing-contract-version");
}

TEST_F(Seed000Test, EveryStepKindThroughThePipelineAndTheReceiptNamesTheAdapter) {
  Start("        via_adapter: {2: a21}\n");
  const Decision d = Run(Event(
      "e1", R"({"schemaVersion":2,"orderId":"o-1","state":"done","amountMinor":1234,"legacy":7})"));
  ASSERT_EQ(d.outcome, Outcome::kApplied) << d.reason << " " << d.message;
  EXPECT_EQ(d.adapter, "a21");
  const Projection p = ProjectionOf("order-104");
  EXPECT_EQ(p.state, "delivered");                                  // moved, then mapped
  EXPECT_EQ(p.fields_json, R"({"amount":12.34,"orderId":"o-1"})");  // converted and moved
  const LedgerEntry receipt = Receipt("e1");
  EXPECT_EQ(receipt.adapter, "a21");
  EXPECT_EQ(receipt.input_schema_version, 2);  // what the event carried, not what was read
  EXPECT_EQ(receipt.wrote_json,
            R"({"state":"delivered","fields":{"orderId":"o-1","amount":12.34}})");
  // A version that is accepted as it is reads no adapter.
  EXPECT_EQ(Run(Event("e2", R"({"schemaVersion":1,"orderId":"o-1","status":"paid"})")).adapter, "");
  EXPECT_EQ(Receipt("e2").adapter, "");
}

TEST_F(Seed000Test, AnAdapterWhoseOutputBreaksTheTargetIsRefusedAtRunTimeAndByLint) {
  // Without the drop, v2's legacy member reaches the closed v1 schema.
  std::string broken = kAdapter21;
  broken.replace(broken.find("  - drop: /legacy\n"), 18, "");
  Write("contracts/adapters/a21.yaml", broken);
  Start("        via_adapter: {2: a21}\n");
  const Decision d =
      Run(Event("e1", R"({"schemaVersion":2,"orderId":"o-1","state":"paid","legacy":7})"));
  EXPECT_EQ(d.outcome, Outcome::kPayloadInvalid);
  EXPECT_EQ(d.reason, "adapter-output-invalid");
  EXPECT_EQ(d.adapter, "a21");
  ASSERT_FALSE(d.errors.empty());
  EXPECT_NE(d.errors[0].find("legacy"), std::string::npos) << d.errors[0];
  // Without legacy the same adapter's output is fine.
  EXPECT_EQ(Run(Event("e2", R"({"schemaVersion":2,"orderId":"o-1","state":"paid"})")).outcome,
            Outcome::kApplied);
  // Lint tries it on v2's example and finds the break before anything runs.
  auto findings = LintAdapters((dir_ / "contracts").string());
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  bool found = false;
  for (const LintFinding& f : *findings) found |= f.code == "ADAPTER_OUTPUT_INVALID";
  EXPECT_TRUE(found);
}

TEST_F(Seed000Test, LintFindsABreakOnlyAGeneratedPayloadShows) {
  // v3 gives no examples. With v2 closed, a v3 payload with its optional note breaks v2 unless
  // a32 drops the note: only a generated payload can show it.
  Write("contracts/order.status.changed/v2.schema.json",
        R"({"type":"object","required":["schemaVersion","orderId","state"],
  "additionalProperties":false,"properties":{"schemaVersion":{"const":2},
  "orderId":{"type":"string"},"state":{"enum":["paid","packed","done"]},
  "amountMinor":{"type":"integer"},"legacy":{"type":"integer"},"orderVersion":{"type":"integer"}}})");
  auto clean = LintAdapters((dir_ / "contracts").string());
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->empty()) << clean->front().code << ": " << clean->front().message;
  Write("contracts/adapters/a32.yaml",
        "id: a32\ntype: order.status.changed\nfrom: 3\nto: 2\n"
        "steps:\n  - set: {at: /schemaVersion, value: 2}\n");
  auto findings = LintAdapters((dir_ / "contracts").string());
  ASSERT_TRUE(findings.ok());
  bool found = false;
  for (const LintFinding& f : *findings) {
    if (f.code == "ADAPTER_OUTPUT_INVALID" && f.file.find("a32") != std::string::npos) {
      found = true;
      EXPECT_NE(f.message.find("note"), std::string::npos) << f.message;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(Seed000Test, AChainIsRefusedUnlessDeclared) {
  // a32 alone leads to v2, which p does not accept: nothing chains it on to a21 by itself.
  auto refused = Load("        via_adapter: {3: a32}\n");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("declared in full"), std::string::npos)
      << refused.status().ToString();
  // Nor does the list form find a chain.
  EXPECT_FALSE(Load("        via_adapter: [3]\n").ok());
  // Declared, it holds.
  Start("        via_adapter: {3: [a32, a21], 2: a21}\n");
  const Decision d =
      Run(Event("e1", R"({"schemaVersion":3,"orderId":"o-1","state":"done","note":"x"})"));
  ASSERT_EQ(d.outcome, Outcome::kApplied) << d.reason << " " << d.message;
  EXPECT_EQ(Receipt("e1").adapter, "a32,a21");
  EXPECT_EQ(ProjectionOf("order-104").state, "delivered");
  // A declared chain must connect.
  EXPECT_FALSE(Load("        via_adapter: {3: [a21, a32]}\n").ok());
  EXPECT_FALSE(Load("        via_adapter: {3: [a32, nope]}\n").ok());
}

TEST_F(Seed000Test, TheListFormFindsTheOneAdapterAndAFailingStepIsRefused) {
  Start("        via_adapter: [2]\n");
  EXPECT_EQ(Run(Event("e1", R"({"schemaVersion":2,"orderId":"o-1","state":"paid"})")).adapter,
            "a21");
  // The payload is checked against its own version's schema first: v2 requires state.
  const Decision invalid = Run(Event("e2", R"({"schemaVersion":2,"orderId":"o-1"})"));
  EXPECT_EQ(invalid.outcome, Outcome::kPayloadInvalid);
  EXPECT_EQ(invalid.reason, "schema-violation");
  // An unmapped value under `unmapped: refuse` fails its step.
  std::string strict = kAdapter21;
  strict.replace(strict.find("unmapped: keep"), 14, "unmapped: refuse");
  Write("contracts/adapters/a21.yaml", strict);
  Start("        via_adapter: [2]\n");
  const Decision unmapped =
      Run(Event("e3", R"({"schemaVersion":2,"orderId":"o-1","state":"paid"})"));
  EXPECT_EQ(unmapped.outcome, Outcome::kPayloadInvalid);
  EXPECT_EQ(unmapped.reason, "adapter-step-failed");
  EXPECT_NE(unmapped.message.find("a21"), std::string::npos) << unmapped.message;
}

TEST_F(Seed000Test, ADeferredEventIsReadThroughItsAdapterWhenItDrains) {
  Start("        via_adapter: {2: a21}\n", "", "cloudevents",
        "ordering: {by: subject, version_at: /data/orderVersion}");
  const Decision later = Run(Event(
      "e2",
      R"({"schemaVersion":2,"orderId":"o-1","state":"done","orderVersion":2,"amountMinor":5})"));
  EXPECT_EQ(later.outcome, Outcome::kDeferred);
  std::vector<Decision> decisions;
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(pipeline_
                  ->Process(**tx,
                            Event("e1", R"({"schemaVersion":1,"orderId":"o-1","status":"paid",)"
                                        R"("orderVersion":1})"),
                            index_++, kNow, decisions)
                  .ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_TRUE(decisions[1].drained);
  EXPECT_EQ(decisions[1].adapter, "a21");
  EXPECT_EQ(Receipt("e2").wrote_json,
            R"({"state":"delivered","fields":{"orderId":"o-1","amount":0.05}})");
  const Projection p = ProjectionOf("order-104");
  EXPECT_EQ(p.version, 2);
  EXPECT_EQ(p.state, "delivered");
  EXPECT_EQ(p.fields_json, R"({"amount":0.05,"orderId":"o-1"})");
  EXPECT_EQ(Receipt("e2").adapter, "a21");
}

TEST_F(Seed000Test, DefaultsNullConstantAndRefusalAreEachInTheReceipt) {
  // v1 requires orderId; a schema without the requirement lets the refusal speak.
  Write("contracts/order.status.changed/v1.schema.json",
        R"({"type":"object","properties":{"schemaVersion":{"const":1}}})");
  Start("", "        defaults: {/paymentReference: null, /amount: {value: 0}, /orderId: refuse}\n");
  const Decision applied =
      Run(Event("e1", R"({"schemaVersion":1,"orderId":"o-1","status":"paid"})"));
  ASSERT_EQ(applied.outcome, Outcome::kApplied) << applied.reason << " " << applied.message;
  EXPECT_EQ(Receipt("e1").wrote_json,
            R"({"state":"paid","fields":{"orderId":"o-1","amount":0,"paymentReference":null},)"
            R"("defaulted":["amount","paymentReference"]})");
  EXPECT_EQ(ProjectionOf("order-104").fields_json,
            R"({"amount":0,"orderId":"o-1","paymentReference":null})");
  // A present member is copied as it is, not defaulted.
  Run(Event("e2", R"({"schemaVersion":1,"orderId":"o-1","status":"paid","amount":3})"));
  EXPECT_EQ(Receipt("e2").wrote_json,
            R"({"state":"paid","fields":{"orderId":"o-1","amount":3,"paymentReference":null},)"
            R"("defaulted":["paymentReference"]})");
  const Decision refused = Run(Event("e3", R"({"schemaVersion":1,"status":"paid"})"));
  EXPECT_EQ(refused.outcome, Outcome::kPayloadInvalid);
  EXPECT_EQ(refused.reason, "missing-member");
  EXPECT_NE(refused.message.find("/orderId"), std::string::npos) << refused.message;
  auto snapshot = store_->Read();
  ASSERT_TRUE(snapshot.ok());
  auto kept = (*snapshot)->QuarantineOf("order-104", 10);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->rows.size(), 1u);
  EXPECT_EQ(kept->rows[0].event_id, "e3");
}

TEST_F(Seed000Test, DefaultsAreCheckedWhenTheConfigurationLoads) {
  EXPECT_FALSE(Load("", "        defaults: {/nope: null}\n").ok());               // not copied
  EXPECT_FALSE(Load("", "        defaults: {/status: null}\n").ok());             // a null state
  EXPECT_FALSE(Load("", "        defaults: {/amount: zero}\n").ok());             // not a default
  EXPECT_FALSE(Load("", "        defaults: {/amount: {value: [1]}}\n").ok());     // not a scalar
  EXPECT_TRUE(Load("", "        defaults: {/status: {value: unknown}}\n").ok());  // a state
  // Constants are typed as adapters type theirs (YAML 1.2's core schema), and always JSON.
  const auto constant = [&](const std::string& value) {
    auto config = Load("", "        defaults: {/amount: {value: " + value + "}}\n");
    EXPECT_TRUE(config.ok()) << value << ": " << config.status().ToString();
    if (!config.ok()) return std::string();
    EXPECT_TRUE(Pipeline::Create(*config).ok()) << value;
    return config->consumers[0]
        .projection.at("order.status.changed")
        .defaults.at("/amount")
        .value_json;
  };
  EXPECT_EQ(constant("010"), "10");
  EXPECT_EQ(constant("yes"), "\"yes\"");
  EXPECT_EQ(constant("0x10"), "\"0x10\"");
  EXPECT_EQ(constant("'7'"), "\"7\"");
  EXPECT_EQ(constant("1.50"), "1.5");
  EXPECT_EQ(constant("~"), "null");
  EXPECT_FALSE(Load("", "        defaults: {/amount: {value: .inf}}\n").ok());
}

TEST_F(Seed000Test, TwoCopiedPointersWithOneNameWriteItOnce) {
  Start("", "        copy: [/orderId, /customer/orderId]\n");
  ASSERT_EQ(Run(Event("e1", R"({"schemaVersion":1,"orderId":"o-1","status":"paid"})")).outcome,
            Outcome::kApplied);
  EXPECT_EQ(Receipt("e1").wrote_json, R"({"state":"paid","fields":{"orderId":"o-1"}})");
}

TEST_F(Seed000Test, AReceiptOfControlCharactersStaysWithinItsBound) {
  Start("");
  // A state of 3,000 control characters: 18,000 bytes once escaped.
  const std::string state(3000, '\x01');
  std::string escaped;
  for (size_t i = 0; i < state.size(); ++i) escaped += "\\u0001";
  Write("contracts/order.status.changed/v1.schema.json", R"({"type":"object"})");
  Start("");
  ASSERT_EQ(Run(Event("e1", R"({"schemaVersion":1,"orderId":"o-1","status":")" + escaped + R"("})"))
                .outcome,
            Outcome::kApplied);
  const std::string wrote = Receipt("e1").wrote_json;
  EXPECT_LE(wrote.size(), kReceiptWroteBytesMax);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(wrote).get(root), simdjson::SUCCESS) << wrote;
  EXPECT_GT(root["truncated_bytes"].get_int64().value(), int64_t(kReceiptWroteBytesMax));
}

TEST_F(Seed000Test, AReceiptKeepsWhatItWroteWithinItsBound) {
  Start("");
  const std::string big(kReceiptWroteBytesMax * 2, 'x');
  ASSERT_EQ(
      Run(Event("e1", R"({"schemaVersion":1,"orderId":")" + big + R"(","status":"paid"})")).outcome,
      Outcome::kApplied);
  const std::string wrote = Receipt("e1").wrote_json;
  EXPECT_LE(wrote.size(), kReceiptWroteBytesMax);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(wrote).get(root), simdjson::SUCCESS) << wrote;
  EXPECT_EQ(std::string_view(root["state"].get_string().value()), "paid");
  EXPECT_EQ(std::string_view(root["members"].at(0).get_string().value()), "orderId");
  EXPECT_GT(root["truncated_bytes"].get_int64().value(), int64_t(kReceiptWroteBytesMax));
}

}  // namespace
}  // namespace evident
