// Gaps that act on their deadlines (evident/gaps.h), against the memory and the SQLite store:
// one replay request however often the deadline is checked and across a reopen, a record for a
// person that a person resolves, a report for `wait`, and records closed by the missing versions
// arriving; the consume loop checks deadlines on its own.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "evident/consumer.h"
#include "evident/evidence.h"
#include "evident/gaps.h"
#include "evident/store_memory.h"
#include "evident/store_sqlite.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

std::string Paid(int64_t version, const std::string& subject = "order-1") {
  return R"({"specversion":"1.0","id":"e)" + std::to_string(version) + "-" + subject +
         R"(","source":"shop","type":"order.paid","subject":")" + subject +
         R"(","schemaversion":1,"data":{"orderVersion":)" + std::to_string(version) + "}}";
}

class GapsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ = fs::temp_directory_path() / ("gaps_test_" + std::to_string(getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "contracts/order.paid");
    fs::create_directories(dir_ / "contracts/consumers");
    std::ofstream(dir_ / "contracts/order.paid/v1.schema.json")
        << R"({"type":"object","required":["orderVersion"]})";
    std::ofstream(dir_ / "evident.yaml") << "contracts: contracts\nconsumers:\n  - id: follower\n";
    store_ = Open();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<Store> Open() {
    if (GetParam() == "sqlite") return OpenSqliteStore((dir_ / "store.db").string()).value();
    if (database_ == nullptr) database_ = NewMemoryDatabase();
    return OpenMemoryStore(database_).value();
  }

  void Route(const std::string& route) {
    std::ofstream(dir_ / "contracts/consumers/follower.yaml")
        << "id: follower\nresultversion: 1\nboundary: [\"shop\"]\n"
           "accepts:\n  - type: order.paid\n    versions: [1]\n    reads: [/orderVersion]\n"
           "ordering:\n  by: subject\n  version_at: /data/orderVersion\n"
           "gap:\n  deadline_seconds: 10\n  route: "
        << route << "\n";
    auto config = LoadConfig((dir_ / "evident.yaml").string());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    pipeline_ = Pipeline::Create(*config).value();
  }

  void Consume(const std::vector<std::string>& events, int64_t now_ms) {
    std::vector<Decision> decisions;
    auto tx = store_->Begin().value();
    for (const std::string& e : events)
      ASSERT_TRUE(pipeline_->Process(*tx, e, 0, now_ms, decisions).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }

  GapCheck Check(int64_t now_ms) {
    auto check = CheckGapDeadlines(*store_, now_ms);
    EXPECT_TRUE(check.ok()) << check.status().ToString();
    return check.ok() ? *check : GapCheck{};
  }

  std::vector<OutboxRow> Outbox() {
    return store_->Read().value()->OutboxRows(OutboxSelect::kAll, 0).value().rows;
  }
  std::vector<GapRecord> Records(const std::string& subject = "order-1") {
    return store_->Read().value()->GapRecordsOf("follower", subject).value().rows;
  }

  fs::path dir_;
  std::shared_ptr<MemoryDatabase> database_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Pipeline> pipeline_;
};

TEST_P(GapsTest, ARequestReplayGapPastItsDeadlineAsksOnceHoweverOftenItIsChecked) {
  Route("request-replay");
  Consume({Paid(1), Paid(4), Paid(5)}, 1000);  // v2 and v3 are missing; deadline 11000
  EXPECT_EQ(Check(10999).requested, 0);        // not yet
  EXPECT_TRUE(Outbox().empty());
  EXPECT_EQ(Check(11001).requested, 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Check(12000 + i).requested, 0);
  store_.reset();  // a restart
  store_ = Open();
  EXPECT_EQ(Check(20000).requested, 0);
  const std::vector<OutboxRow> rows = Outbox();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].type, kReplayRequestedType);
  EXPECT_EQ(rows[0].source, "evident://consumers/follower");
  EXPECT_EQ(rows[0].subject, "order-1");
  simdjson::dom::parser parser;
  const simdjson::dom::element event = parser.parse(rows[0].bytes).value();
  EXPECT_EQ(std::string_view(event["specversion"]), "1.0");
  EXPECT_EQ(std::string_view(event["id"]), rows[0].event_id);
  EXPECT_EQ(std::string_view(event["data"]["consumer"]), "follower");
  EXPECT_EQ(std::string_view(event["data"]["subject"]), "order-1");
  EXPECT_EQ(int64_t(event["data"]["missing_from"]), 2);
  EXPECT_EQ(int64_t(event["data"]["missing_to"]), 3);
  EXPECT_EQ(event["data"]["waiting_versions"].get_array().size(), 2u);
  const std::vector<GapRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].state, GapState::kRequested);
  EXPECT_EQ(records[0].expected_version, 2);
  EXPECT_EQ(records[0].missing_to, 3);
  EXPECT_EQ(records[0].acted_at_ms, 11001);
  EXPECT_EQ(records[0].request_event_id, rows[0].event_id);
  // The missing versions arrive: the pipeline closes the record as it applies them.
  Consume({Paid(2), Paid(3)}, 30000);
  const std::vector<GapRecord> closed = Records();
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].state, GapState::kClosed);
  EXPECT_EQ(closed[0].closed_by, "arrival");
  EXPECT_EQ(closed[0].closed_at_ms, 30000);
  // Its evidence shows it.
  auto snapshot = store_->Read().value();
  const EvidencePacket packet = ReadEvidence(*snapshot, "order-1").value();
  ASSERT_EQ(packet.consumers.size(), 1u);
  EXPECT_EQ(packet.consumers[0].gap_records.size(), 1u);
}

// Part of a gap's range arrives: its record stays open and still covers the rest, so the rest
// is not asked for again; the record closes when the last missing version arrives.
TEST_P(GapsTest, ARecordCoversItsRangeUntilAllOfItArrives) {
  Route("request-replay");
  Consume({Paid(1), Paid(4)}, 1000);  // v2 and v3 missing
  EXPECT_EQ(Check(20000).requested, 1);
  Consume({Paid(2)}, 21000);
  EXPECT_EQ(Records().at(0).state, GapState::kRequested);
  EXPECT_EQ(Check(22000).requested, 0);
  EXPECT_EQ(Outbox().size(), 1u);
  {
    auto snapshot = store_->Read().value();
    const Gaps gaps = ReadGaps(*snapshot).value();
    ASSERT_EQ(gaps.gaps.size(), 1u);
    EXPECT_EQ(gaps.gaps[0].expected_version, 3);
    ASSERT_TRUE(gaps.gaps[0].record.has_value());  // the 2-3 record covers it
    EXPECT_EQ(gaps.gaps[0].record->expected_version, 2);
  }
  Consume({Paid(3)}, 23000);
  EXPECT_EQ(Records().at(0).state, GapState::kClosed);
  EXPECT_EQ(Records().at(0).closed_at_ms, 23000);
}

TEST_P(GapsTest, AManualGapOpensARecordThatAPersonResolves) {
  Route("manual");
  Consume({Paid(1), Paid(3)}, 1000);
  const GapCheck check = Check(20000);
  EXPECT_EQ(check.manual, 1);
  EXPECT_EQ(check.requested, 0);
  EXPECT_TRUE(Outbox().empty());
  {
    auto snapshot = store_->Read().value();
    const Gaps gaps = ReadGaps(*snapshot).value();
    ASSERT_EQ(gaps.gaps.size(), 1u);
    ASSERT_TRUE(gaps.gaps[0].record.has_value());
    EXPECT_EQ(gaps.gaps[0].record->state, GapState::kManual);
    EXPECT_EQ(snapshot->OpenGapRecords().value().rows.size(), 1u);
  }
  ManualClock clock(21000);
  EXPECT_EQ(ResolveGap(*store_, "follower", "order-1", "", "n", clock).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ResolveGap(*store_, "follower", "order-1", "ops", "asked the owner", clock).value(), 1);
  EXPECT_EQ(ResolveGap(*store_, "follower", "order-1", "ops", "again", clock).status().code(),
            Code::kNotFound);
  const std::vector<GapRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].state, GapState::kClosed);
  EXPECT_EQ(records[0].closed_by, "ops");
  EXPECT_EQ(records[0].closed_at_ms, 21000);  // the clock's time
  EXPECT_EQ(records[0].note, "asked the owner");
  EXPECT_TRUE(store_->Read().value()->OpenGapRecords().value().rows.empty());
  EXPECT_EQ(Check(30000).manual, 0);  // resolved: not opened again
}

TEST_P(GapsTest, AWaitGapOnlyReportsAndTheCheckClosesWhatArrivedSince) {
  Route("wait");
  Consume({Paid(1), Paid(3)}, 1000);
  Consume({Paid(2, "order-2"), Paid(1, "order-3")}, 1000);  // order-2: v1 missing
  const GapCheck check = Check(20000);
  EXPECT_EQ(check.reported, 2);
  EXPECT_TRUE(Outbox().empty());
  EXPECT_EQ(Records("order-2").at(0).expected_version, 1);
  EXPECT_EQ(Records().at(0).state, GapState::kReported);
  Consume({Paid(2)}, 21000);
  EXPECT_EQ(Records().at(0).state, GapState::kClosed);
  EXPECT_EQ(Check(22000).reported, 0);
}

// The consume loop checks deadlines between batches and at the end of a run, on its clock.
TEST_P(GapsTest, TheConsumeLoopActsOnOverdueGaps) {
  Route("request-replay");
  ManualClock clock(1000);
  auto source = NewMemorySource("in", {Paid(1), Paid(3)});
  auto summary = evident::Consume(*pipeline_, *store_, *source, {.clock = &clock});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->gap_actions.requested, 0);
  clock.SleepMs(60000);
  source = NewMemorySource("in2", {});
  summary = evident::Consume(*pipeline_, *store_, *source, {.clock = &clock});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->gap_actions.requested, 1);
  EXPECT_EQ(Outbox().size(), 1u);
  source = NewMemorySource("in3", {});
  summary = evident::Consume(*pipeline_, *store_, *source, {.clock = &clock});
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->gap_actions.requested, 0);
  EXPECT_EQ(Outbox().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Stores, GapsTest, ::testing::Values("memory", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace evident
