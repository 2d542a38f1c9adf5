// The Store conformance suite: every backend of evident/store.h must pass it unchanged.
// Backends register a factory below (RocksDB's env_basic_test pattern); PostgreSQL joins when it
// exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "evident/store.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

struct Backend {
  std::string name;
  // Opens the store kept in `dir`: fresh and empty the first time, the same one again after a
  // restart (Reopen).
  std::function<std::unique_ptr<Store>(const fs::path& dir)> open;
};

class StoreConformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = GetParam().open(dir_);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void Reopen() {
    store_.reset();
    store_ = GetParam().open(dir_);
  }
  static LedgerEntry Receipt(std::string id, std::string state = "applied") {
    LedgerEntry e;
    e.consumer = "c";
    e.source = "s";
    e.event_id = std::move(id);
    e.state = std::move(state);
    e.type = "t";
    e.subject = "order-1";
    e.subject_version = 1;
    e.input_schema_version = 1;
    e.result_version = 1;
    e.projection_version = 1;
    e.committed_at_ms = 1000;
    return e;
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreConformance, CommittedWritesSurviveARestart) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertLedger(Receipt("e1")).ok());
  Projection p{"c", "order-1", 1, "paid", R"({"orderId":"order-1"})", "s", 1, 1000};
  ASSERT_TRUE(store_->PutProjection(p).ok());
  const InputCheckpoint checkpoint{.lines = 7, .bytes = 700, .prefix_hash = 0xfedcba9876543210ULL};
  ASSERT_TRUE(store_->SetCheckpoint("input.ndjson", checkpoint).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  auto entry = store_->FindLedger("c", "s", "e1");
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->projection_version, 1);
  auto projection = store_->FindProjection("c", "order-1");
  ASSERT_TRUE(projection.ok() && projection->has_value());
  EXPECT_EQ((*projection)->state, "paid");
  EXPECT_EQ((*projection)->fields_json, R"({"orderId":"order-1"})");
  const std::optional<InputCheckpoint> read = store_->GetCheckpoint("input.ndjson").value();
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->lines, 7);
  EXPECT_EQ(read->bytes, 700);
  EXPECT_EQ(read->prefix_hash, 0xfedcba9876543210ULL);  // all 64 bits, the top one too
  EXPECT_TRUE(read->identified);
  EXPECT_FALSE(store_->GetCheckpoint("other").value().has_value());
}

TEST_P(StoreConformance, RollbackLeavesNothing) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertLedger(Receipt("e1")).ok());
  ASSERT_TRUE(store_->PutProjection({"c", "order-1", 1, "paid", "{}", "s", 1, 1}).ok());
  ASSERT_TRUE(
      store_
          ->Keep({0, "c", "stale", "stale-version", "m", "s", "e0", "t", "order-1", 1, "raw", 1, 0})
          .ok());
  ASSERT_TRUE(store_->SetCheckpoint("in", {.lines = 3, .bytes = 30, .prefix_hash = 1}).ok());
  ASSERT_TRUE(store_->Rollback().ok());
  EXPECT_FALSE(store_->FindLedger("c", "s", "e1").value().has_value());
  EXPECT_FALSE(store_->FindProjection("c", "order-1").value().has_value());
  EXPECT_TRUE(store_->KeptOf("order-1").value().empty());
  EXPECT_FALSE(store_->GetCheckpoint("in").value().has_value());
}

TEST_P(StoreConformance, LedgerKeyIsUniqueAndDuplicatesAreCounted) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertLedger(Receipt("e1")).ok());
  // A receipt never exists twice, and the refusal says so: the pipeline reads AlreadyExists as
  // "duplicate".
  EXPECT_EQ(store_->InsertLedger(Receipt("e1")).code(), Code::kAlreadyExists);
  ASSERT_TRUE(store_->CountDuplicate("c", "s", "e1", 2000).ok());
  ASSERT_TRUE(store_->CountDuplicate("c", "s", "e1", 3000).ok());
  ASSERT_TRUE(store_->Commit().ok());
  auto entry = store_->FindLedger("c", "s", "e1").value().value();
  EXPECT_EQ(entry.duplicates, 2);
  EXPECT_EQ(entry.last_duplicate_at_ms, 3000);
  // Another consumer, or another source, is another key.
  ASSERT_TRUE(store_->Begin().ok());
  LedgerEntry other = Receipt("e1");
  other.consumer = "d";
  EXPECT_TRUE(store_->InsertLedger(other).ok());
  other.source = "s2";
  EXPECT_TRUE(store_->InsertLedger(other).ok());
  ASSERT_TRUE(store_->Commit().ok());
}

TEST_P(StoreConformance, DeferredRowsAndMarkApplied) {
  ASSERT_TRUE(store_->Begin().ok());
  DeferredEvent d{"c", "order-1", 3,      "s", "e3", "t", 1, 2, std::string("raw\0bytes", 9),
                  10,  20,        "wait", 5};
  ASSERT_TRUE(store_->InsertDeferred(d).ok());
  ASSERT_TRUE(store_->InsertLedger(Receipt("e3", "deferred")).ok());
  ASSERT_TRUE(store_->Commit().ok());
  auto found = store_->FindDeferred("c", "order-1", 3).value();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->raw, std::string("raw\0bytes", 9));  // bytes, not text
  EXPECT_EQ(found->expected_version, 2);
  EXPECT_EQ(found->input_index, 5);
  EXPECT_FALSE(store_->FindDeferred("c", "order-1", 4).value().has_value());
  EXPECT_EQ(store_->AllDeferred().value().size(), 1u);
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->MarkApplied("c", "s", "e3", 3, 30).ok());
  EXPECT_FALSE(store_->MarkApplied("c", "s", "e3", 3, 30).ok());  // no longer deferred
  ASSERT_TRUE(store_->DeleteDeferred("c", "order-1", 3).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->FindLedger("c", "s", "e3").value()->state, "applied");
  EXPECT_TRUE(store_->DeferredOf("c", "order-1").value().empty());
}

// A gap that opens and closes inside one transaction: the deferred event is found, deleted and
// never left behind; one that stays open is there after commit, and reads see it before commit.
TEST_P(StoreConformance, DeferredInsideOneTransaction) {
  DeferredEvent d{"c", "order-1", 3, "s", "e3", "t", 1, 2, "raw", 10, 20, "wait", 5};
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertDeferred(d).ok());
  auto found = store_->FindDeferred("c", "order-1", 3).value();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->event_id, "e3");
  EXPECT_FALSE(store_->InsertDeferred(d).ok());  // one event per version waits
  ASSERT_TRUE(store_->DeleteDeferred("c", "order-1", 3).ok());
  EXPECT_FALSE(store_->FindDeferred("c", "order-1", 3).value().has_value());
  d.subject_version = 4;
  d.event_id = "e4";
  ASSERT_TRUE(store_->InsertDeferred(d).ok());
  EXPECT_EQ(store_->DeferredOf("c", "order-1").value().size(), 1u);
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  EXPECT_FALSE(store_->FindDeferred("c", "order-1", 3).value().has_value());
  auto left = store_->AllDeferred().value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].event_id, "e4");
  // Rolled back, a deferred event is gone.
  ASSERT_TRUE(store_->Begin().ok());
  d.subject_version = 5;
  ASSERT_TRUE(store_->InsertDeferred(d).ok());
  ASSERT_TRUE(store_->Rollback().ok());
  EXPECT_FALSE(store_->FindDeferred("c", "order-1", 5).value().has_value());
}

TEST_P(StoreConformance, ReadPathSeesWritesOfTheOpenTransaction) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertLedger(Receipt("e1")).ok());
  ASSERT_TRUE(store_->PutProjection({"c", "order-1", 1, "paid", "{}", "s", 1, 1}).ok());
  EXPECT_EQ(store_->FindProjection("c", "order-1").value()->state, "paid");
  ASSERT_TRUE(store_->PutProjection({"c", "order-1", 2, "packed", "{}", "s", 2, 2}).ok());
  auto all = store_->ProjectionsOf("order-1").value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].version, 2);
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->FindProjection("c", "order-1").value()->state, "packed");
}

TEST_P(StoreConformance, KeptJournalEvidenceReadBackInOrder) {
  ASSERT_TRUE(store_->Begin().ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store_
                    ->Keep({0, "c", "stale", "stale-version", "m" + std::to_string(i), "s",
                            "e" + std::to_string(i), "t", "order-1", i, "raw", 1, i})
                    .ok());
    ASSERT_TRUE(
        store_->Journal({0, "c", "duplicate", "s", "e" + std::to_string(i), "order-1", i, 100 + i})
            .ok());
  }
  ASSERT_TRUE(store_->PutEvidence({"c", "order-1", "payment", "s", "e1", 1, 5}).ok());
  ASSERT_TRUE(store_->PutEvidence({"c", "order-1", "payment", "s", "e2", 2, 6}).ok());
  ASSERT_TRUE(store_->PutEvidence({"c", "order-1", "cancellation", "s", "e3", 3, 7}).ok());
  // Evidence belongs to the subject's projection, which the same transaction puts.
  ASSERT_TRUE(store_->PutProjection({"c", "order-1", 3, "cancelled", "{}", "s", 3, 7}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  auto kept = store_->KeptOf("order-1").value();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[2].message, "m2");
  EXPECT_LT(kept[0].seq, kept[1].seq);
  auto journal = store_->JournalOf("c", "order-1").value();
  ASSERT_EQ(journal.size(), 3u);
  EXPECT_EQ(journal[1].at_ms, 101);
  auto evidence = store_->EvidenceOf("c", "order-1").value();
  ASSERT_EQ(evidence.size(), 2u);  // one record per name: the latest proof
  EXPECT_EQ(evidence[0].name, "cancellation");
  EXPECT_EQ(evidence[1].name, "payment");
  EXPECT_EQ(evidence[1].event_id, "e2");
  EXPECT_EQ(evidence[1].subject_version, 2);
  EXPECT_EQ(evidence[1].recorded_at_ms, 6);
  EXPECT_TRUE(store_->EvidenceOf("c", "order-2").value().empty());
}

// Within one transaction, each consumer of one subject reads its own projection (present or
// absent), and a projection put in the transaction is what the next read sees.
TEST_P(StoreConformance, ProjectionsOfOneSubjectStaySeparatePerConsumer) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutProjection({"a", "order-1", 1, "paid", "{}", "s", 1, 5}).ok());
  ASSERT_TRUE(store_->PutProjection({"b", "order-1", 4, "shipped", "{}", "s", 4, 5}).ok());
  ASSERT_TRUE(store_->PutProjection({"a", "order-2", 2, "other", "{}", "s", 2, 5}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  ASSERT_TRUE(store_->Begin().ok());
  auto b = store_->EditProjection("b", "order-1");
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->found);
  EXPECT_EQ(b->projection->state, "shipped");
  b->projection->state = "delivered";
  ASSERT_TRUE(store_->PutProjection(*b->projection).ok());
  auto a = store_->EditProjection("a", "order-1");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->found);
  EXPECT_EQ(a->projection->version, 1);
  EXPECT_EQ(a->projection->state, "paid");
  auto c = store_->EditProjection("c", "order-1");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->found);
  EXPECT_EQ(c->projection->version, 0);
  auto again = store_->FindProjection("b", "order-1");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->state, "delivered");
  EXPECT_FALSE(store_->FindProjection("b", "order-2")->has_value());
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  EXPECT_EQ(store_->FindProjection("b", "order-1")->value().state, "delivered");
  EXPECT_EQ(store_->FindProjection("a", "order-1")->value().state, "paid");
  EXPECT_FALSE(store_->FindProjection("c", "order-1")->has_value());
}

// Each record keeps its own source, whether it is the projection's owner or another source, and
// also after the owner changes.
TEST_P(StoreConformance, EvidenceKeepsEachRecordsSource) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutEvidence({"c", "order-1", "payment", "owner-a", "e1", 1, 5}).ok());
  ASSERT_TRUE(store_->PutEvidence({"c", "order-1", "refund", "other", "e2", 2, 6}).ok());
  ASSERT_TRUE(store_->PutProjection({"c", "order-1", 2, "paid", "{}", "owner-a", 2, 6}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  auto evidence = store_->EvidenceOf("c", "order-1").value();
  ASSERT_EQ(evidence.size(), 2u);
  EXPECT_EQ(evidence[0].source, "owner-a");
  EXPECT_EQ(evidence[1].source, "other");

  // The owner changes: the earlier record still names the source it came from.
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutEvidence({"c", "order-1", "refund", "owner-b", "e3", 3, 7}).ok());
  ASSERT_TRUE(store_->PutProjection({"c", "order-1", 3, "refunded", "{}", "owner-b", 3, 7}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  evidence = store_->EvidenceOf("c", "order-1").value();
  ASSERT_EQ(evidence.size(), 2u);
  EXPECT_EQ(evidence[0].name, "payment");
  EXPECT_EQ(evidence[0].source, "owner-a");
  EXPECT_EQ(evidence[1].source, "owner-b");
  EXPECT_EQ(evidence[1].event_id, "e3");
}

INSTANTIATE_TEST_SUITE_P(
    Backends, StoreConformance,
    ::testing::Values(Backend{"sqlite",
                              [](const fs::path& dir) -> std::unique_ptr<Store> {
                                auto store = OpenSqliteStore((dir / "store.db").string());
                                return store.ok() ? std::move(store).value() : nullptr;
                              }}),
    [](const ::testing::TestParamInfo<Backend>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace evident
