// Seed 000 end to end through the evident binary: the `contract` profile in validate and consume
// (built in, from a profile file, from the config), the orders example's v4 read through its
// adapter, what each receipt wrote in `evident evidence`, and the adapter in `contracts impact`,
// `contracts lint` and `schema check`.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

class Seed000Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("evident_seed000_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy(SourcePath("examples/orders"), dir_ / "orders", fs::copy_options::recursive);
    store_ = "sqlite:" + (dir_ / "store.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& relative, const std::string& text) const {
    const fs::path file = dir_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
  std::string Config() const { return (dir_ / "orders/evident.yaml").string(); }

  fs::path dir_;
  std::string store_;
};

constexpr const char* kSeedEvent =
    R"({"contractVersion":1,"id":"evt-104","source":"training://orders/checkout",)"
    R"("type":"order.status.changed","subject":"order-104","occurredAt":"2026-07-31T12:00:00Z",)"
    R"("data":{"schemaVersion":1,"orderId":"order-104","status":"paid"}})";

TEST_F(Seed000Cli, ValidateAcceptsTheSeedsEventUnderTheContractProfile) {
  const std::string file = SourcePath("examples/envelopes/seed-000.json");
  const auto ok = RunEvident({"validate", "--profile", "contract", file});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find(R"("outcome":"valid")"), std::string::npos) << ok.out;
  // Under CloudEvents the same event has no specversion.
  const auto ce = RunEvident({"validate", file});
  EXPECT_EQ(ce.exit_code, 1);
  EXPECT_NE(ce.out.find("missing-specversion"), std::string::npos) << ce.out;
  // Each required member missing is named.
  std::string no_subject = kSeedEvent;
  no_subject.replace(no_subject.find(R"("subject":"order-104",)"), 22, "");
  const auto missing = RunEvident({"validate", "--profile", "contract", "-"}, no_subject + "\n");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("missing-subject"), std::string::npos) << missing.out;
}

TEST_F(Seed000Cli, ConsumeTakesTheProfileBuiltInFromAFileAndFromTheConfig) {
  const std::string input = Write("seed.ndjson", std::string(kSeedEvent) + "\n");
  const std::string profile =
      Write("seed-profile.json",
            R"({"name":"seed","attributes":{"id":"/id","source":"/source","type":"/type",)"
            R"("subject":"/subject","contractversion":"/contractVersion","time":"/occurredAt",)"
            R"("schemaversion":"/data/schemaVersion"},"constants":{"specversion":"1.0"},)"
            R"("required":["subject","contractversion","schemaversion"]})");
  for (const std::vector<std::string>& how :
       {std::vector<std::string>{"--profile", "contract"},
        std::vector<std::string>{"--profile-file", profile}}) {
    fs::remove(dir_ / "store.db");
    std::vector<std::string> args = {"consume", "--config", Config(),     "--store", store_,
                                     "--input", input,      "--outcomes", "-"};
    args.insert(args.end(), how.begin(), how.end());
    const auto r = RunEvident(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(R"("outcome":"applied")"), std::string::npos) << how[0] << "\n" << r.out;
  }
  EXPECT_EQ(RunEvident({"consume", "--config", Config(), "--store", store_, "--input", input,
                        "--profile", "contract", "--profile-file", profile})
                .exit_code,
            2);
  // profile_file in the configuration, relative to it.
  std::ifstream in(Config());
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  yaml.replace(yaml.find("profile: cloudevents"), 20, "profile_file: ../seed-profile.json");
  Write("orders/evident.yaml", yaml);
  fs::remove(dir_ / "store.db");
  const auto r = RunEvident(
      {"consume", "--config", Config(), "--store", store_, "--input", input, "--outcomes", "-"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("outcome":"applied")"), std::string::npos) << r.out;
}

TEST_F(Seed000Cli, EvidenceShowsWhatEachReceiptWroteAndTheAdapter) {
  for (const char* input : {"orders/events.ndjson", "orders/events-v4.ndjson"}) {
    const auto r = RunEvident(
        {"consume", "--config", Config(), "--store", store_, "--input", (dir_ / input).string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto r = RunEvident({"evidence", "order-104", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(r.out).get(root), simdjson::SUCCESS) << r.out;
  simdjson::dom::element consumer = root["consumers"].at(0);
  ASSERT_EQ(std::string_view(consumer["consumer"].get_string().value()), "orders-projection");
  std::map<std::string, std::string> wrote, adapter;
  for (simdjson::dom::element applied : consumer["applied"].get_array()) {
    const std::string id(applied["id"].get_string().value());
    wrote[id] = simdjson::to_string(applied["wrote"]);
    adapter[id] = applied["adapter"].is_null()
                      ? "null"
                      : std::string(applied["adapter"].get_string().value());
  }
  // v1 has no paymentReference: the declared default (null) is written and named.
  EXPECT_EQ(wrote["evt-104"],
            R"({"state":"paid","fields":{"orderId":"order-104","paymentReference":null},)"
            R"("defaulted":["paymentReference"]})");
  EXPECT_EQ(wrote["evt-105"],
            R"({"state":"packed","fields":{"orderId":"order-104","paymentReference":"pay-5521"}})");
  EXPECT_EQ(adapter["evt-105"], "null");
  // v4 renamed status to state; orders-projection reads it through its adapter.
  EXPECT_EQ(adapter["evt-109"], "order-status-v4-to-v2");
  EXPECT_NE(wrote["evt-109"].find(R"("state":"delivered")"), std::string::npos) << wrote["evt-109"];
  // v3 has no adapter: still contract-update-required.
  EXPECT_NE(r.out.find("unaccepted-schema-version"), std::string::npos);
}

TEST_F(Seed000Cli, ImpactSaysSafeThroughTheAdapterAndLintChecksIt) {
  const std::string contracts = (dir_ / "orders/contracts").string();
  const std::string v3 = contracts + "/order.status.changed/v3.schema.json";
  const std::string v4 = contracts + "/order.status.changed/v4.schema.json";
  const auto through = RunEvident({"contracts", "impact", "--contracts", contracts, "--type",
                                   "order.status.changed", "--schema", v4, "--format", "json"});
  EXPECT_EQ(through.exit_code, 0) << through.out << through.err;
  EXPECT_NE(through.out.find(R"("verdict":"safe-through-adapter")"), std::string::npos)
      << through.out;
  EXPECT_NE(through.out.find(R"("adapter":"order-status-v4-to-v2")"), std::string::npos);
  const auto unsafe = RunEvident({"contracts", "impact", "--contracts", contracts, "--type",
                                  "order.status.changed", "--schema", v3});
  EXPECT_EQ(unsafe.exit_code, 1) << unsafe.out;
  EXPECT_NE(unsafe.out.find("contract-update-required"), std::string::npos) << unsafe.out;

  // A proposed v4 on which the adapter does not hold (state optional: a payload without it
  // fails the required move) is not safe through it: the adapter is run on the new schema's
  // payloads, not taken on trust.
  const std::string loose = Write(
      "v4.schema.json",
      R"({"type":"object","required":["schemaVersion","orderId"],"properties":{)"
      R"("schemaVersion":{"const":4},"orderId":{"type":"string"},"state":{"type":"string"}}})");
  const auto broken = RunEvident({"contracts", "impact", "--contracts", contracts, "--type",
                                  "order.status.changed", "--schema", loose, "--format", "json"});
  EXPECT_EQ(broken.exit_code, 1) << broken.out << broken.err;
  EXPECT_NE(broken.out.find(R"("verdict":"contract-update-required")"), std::string::npos)
      << broken.out;
  EXPECT_NE(broken.out.find("ADAPTER_STEP_FAILS"), std::string::npos) << broken.out;

  EXPECT_EQ(RunEvident({"contracts", "lint", contracts}).exit_code, 0);
  // The adapter without its move: v4's examples come out without the status v2 requires.
  Write("orders/contracts/adapters/order-status-v4-to-v2.yaml",
        "id: order-status-v4-to-v2\ntype: order.status.changed\nfrom: 4\nto: 2\n"
        "steps:\n  - set: {at: /schemaVersion, value: 2}\n");
  const auto lint = RunEvident({"contracts", "lint", contracts});
  EXPECT_EQ(lint.exit_code, 1);
  EXPECT_NE(lint.out.find("ADAPTER_OUTPUT_INVALID"), std::string::npos) << lint.out;
  // At run time the same adapter refuses v4 events as adapter-output-invalid.
  const auto consumed =
      RunEvident({"consume", "--config", Config(), "--store", store_, "--input",
                  (dir_ / "orders/events-v4.ndjson").string(), "--outcomes", "-"});
  EXPECT_EQ(consumed.exit_code, 0) << consumed.err;
  EXPECT_NE(consumed.out.find(R"("reason":"adapter-output-invalid")"), std::string::npos)
      << consumed.out;
}

TEST_F(Seed000Cli, SchemaCheckSuggestsAnAdapterForALikelyRename) {
  const auto r =
      RunEvident({"schema", "check",
                  SourcePath("examples/orders/contracts/order.status.changed/v2.schema.json"),
                  SourcePath("examples/orders/contracts/order.status.changed/v3.schema.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("LIKELY_RENAME"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("suggestion: adapter step (new version to old): - move: {from: /state, "
                       "to: /status, required: true}"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace evident::testing
