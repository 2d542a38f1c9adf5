// FaultStore: each call's fault fires on exactly its nth call, a failed call or commit leaves
// nothing behind, and delays go through the sleep function. (With no faults set, the wrapper
// passes the Store conformance suite: src/store/store_backends.cc.)
#include "evident/fault_store.h"

#include <gtest/gtest.h>

#include <set>

#include "evident/store_memory.h"

namespace evident {
namespace {

constexpr StoreCall kEveryCall[] = {
    StoreCall::kBegin,
    StoreCall::kRead,
    StoreCall::kCommit,
    StoreCall::kLoad,
    StoreCall::kFindLedger,
    StoreCall::kInsertLedger,
    StoreCall::kMarkApplied,
    StoreCall::kCountDuplicate,
    StoreCall::kDeleteLedger,
    StoreCall::kAppliedAfter,
    StoreCall::kReadProjection,
    StoreCall::kPutProjection,
    StoreCall::kFindDeferred,
    StoreCall::kInsertDeferred,
    StoreCall::kDeleteDeferred,
    StoreCall::kQuarantine,
    StoreCall::kJournal,
    StoreCall::kPutEvidence,
    StoreCall::kSetPosition,
    StoreCall::kGetPosition,
    StoreCall::kFindProjection,
    StoreCall::kProjectionsOf,
    StoreCall::kLedgerOf,
    StoreCall::kDeferredOf,
    StoreCall::kAllDeferred,
    StoreCall::kQuarantineOf,
    StoreCall::kJournalOf,
    StoreCall::kEvidenceOf,
    StoreCall::kCounts,
    StoreCall::kAppendOutbox,
    StoreCall::kPendingOutbox,
    StoreCall::kMarkOutboxSent,
    StoreCall::kRecordOutboxAttempt,
    StoreCall::kDeleteSentOutbox,
    StoreCall::kOutboxRows,
    StoreCall::kOutboxStatsNow,
    StoreCall::kFindOutbox,
    StoreCall::kOutboxOfSubject,
    StoreCall::kFindQuarantine,
    StoreCall::kSetQuarantineStatus,
    StoreCall::kAuditQuarantine,
    StoreCall::kListQuarantine,
    StoreCall::kAuditOf,
    StoreCall::kFindGap,
    StoreCall::kInsertGap,
    StoreCall::kCloseGaps,
    StoreCall::kUpdateGap,
    StoreCall::kGapRecordsOf,
    StoreCall::kOpenGapRecords,
    StoreCall::kInsertIntent,
    StoreCall::kFindIntent,
    StoreCall::kDueIntents,
    StoreCall::kUpdateIntent,
    StoreCall::kLogIntent,
    StoreCall::kLatestIntentOf,
    StoreCall::kInsertCompensation,
    StoreCall::kUpdateCompensation,
    StoreCall::kCompensationsOfIntent,
    StoreCall::kListIntents,
    StoreCall::kIntentLogOf,
    StoreCall::kListCompensations,
    StoreCall::kInsertCorrection,
    StoreCall::kCorrectionsOf,
    StoreCall::kWillDecide,
    StoreCall::kReadProjectionLocked,
    StoreCall::kParkOutbox,
    StoreCall::kUnparkOutbox,
    StoreCall::kClaimOutbox,
    StoreCall::kJoinGroup,
    StoreCall::kLeaveGroup,
    StoreCall::kAcquireLease,
    StoreCall::kRenewLease,
    StoreCall::kReleaseLease,
    StoreCall::kFenceLease,
    StoreCall::kSeizeLease,
    StoreCall::kIntendOnce,
    StoreCall::kRecordCompensation,
    StoreCall::kRecordGap,
    StoreCall::kGroupLeases,
    StoreCall::kGroupMembers,
    StoreCall::kGroupPartitionCount,
    StoreCall::kWaitForOutbox,
    StoreCall::kRemoveRetained,
    StoreCall::kRecordRetention,
    StoreCall::kRetainable,
    StoreCall::kCountRetainable,
    StoreCall::kLatestRetention,
    StoreCall::kSpaceNow,
    StoreCall::kReturnSpace,
    StoreCall::kCompact,
    StoreCall::kPushSet,
    StoreCall::kLatestSetVersion,
    StoreCall::kSetAt,
    StoreCall::kSetHistory,
    StoreCall::kWillDecideSubject,
    StoreCall::kForgetLedgerDigests,
    StoreCall::kRetainableLedger,
    StoreCall::kCountLedgerDigests,
};
static_assert(std::size(kEveryCall) == kStoreCallCount);

LedgerEntry Receipt(std::string event_id, LedgerState state = LedgerState::kApplied) {
  LedgerEntry e;
  e.consumer = "c";
  e.source = "s";
  e.event_id = std::move(event_id);
  e.state = state;
  e.subject = "order-1";
  e.subject_version = 1;
  return e;
}

Projection MakeProjection() {
  Projection p;
  p.consumer = "c";
  p.subject = "order-1";
  p.version = 1;
  return p;
}

// The status of one call of that kind, on a transaction or snapshot of its own (rolled back or
// released after). Other calls it needs first are counted under their own kinds.
Status Transact(Transaction& tx, StoreCall call) {
  switch (call) {
    case StoreCall::kLoad:
      return tx.Load({.ledger = {{"c", "s", "e1"}}, .subjects = {{"c", "order-1"}}}).status();
    case StoreCall::kFindLedger:
      return tx.FindLedger("c", "s", "e1").status();
    case StoreCall::kInsertLedger:
      return tx.InsertLedger(Receipt("e1")).status();
    case StoreCall::kMarkApplied: {
      EVIDENT_RETURN_IF_ERROR(tx.InsertLedger(Receipt("e1", LedgerState::kDeferred)).status());
      return tx.MarkApplied("c", "s", "e1", 1, 10);
    }
    case StoreCall::kCountDuplicate:
      return tx.CountDuplicate("c", "s", "e1", 10);
    case StoreCall::kDeleteLedger:
      return tx.DeleteLedger("c", "s", "e1");
    case StoreCall::kAppliedAfter:
      return tx.AppliedAfter("c", "order-1", 0, {}).status();
    case StoreCall::kReadProjection: {
      Projection out;
      return tx.ReadProjection("c", "order-1", out).status();
    }
    case StoreCall::kPutProjection:
      return tx.PutProjection(MakeProjection(), std::nullopt);
    case StoreCall::kFindDeferred:
      return tx.FindDeferred("c", "order-1", 2).status();
    case StoreCall::kInsertDeferred:
      return tx.InsertDeferred(DeferredEvent{.consumer = "c", .subject = "order-1"}).status();
    case StoreCall::kDeleteDeferred:
      return tx.DeleteDeferred("c", "order-1", 2);
    case StoreCall::kQuarantine:
      return tx.Quarantine(QuarantineRecord{.subject = "order-1"}).status();
    case StoreCall::kFindQuarantine:
      return tx.FindQuarantine(1).status();
    case StoreCall::kFindGap:
      return tx.FindGap("c", "order-1", 2).status();
    case StoreCall::kInsertGap:
      return tx.InsertGap(GapRecord{.consumer = "c", .subject = "order-1"}).status();
    case StoreCall::kCloseGaps:
      return tx.CloseGaps("c", "order-1", 5, GapClosing{.at_ms = 10, .by = "arrival"}).status();
    case StoreCall::kUpdateGap: {
      EVIDENT_RETURN_IF_ERROR(
          tx.InsertGap(GapRecord{.consumer = "c", .subject = "order-1"}).status());
      return tx.UpdateGap(GapRecord{.consumer = "c", .subject = "order-1", .missing_to = 3});
    }
    case StoreCall::kSetQuarantineStatus: {
      EVIDENT_ASSIGN_OR_RETURN(const QuarantineKept kept,
                               tx.Quarantine(QuarantineRecord{.subject = "order-1"}));
      return tx.SetQuarantineStatus(kept.id, QuarantineStatus::kDiscarded);
    }
    case StoreCall::kAuditQuarantine: {
      EVIDENT_ASSIGN_OR_RETURN(const QuarantineKept kept,
                               tx.Quarantine(QuarantineRecord{.subject = "order-1"}));
      return tx.AuditQuarantine(QuarantineAudit{.record_id = kept.id, .by = "ops"});
    }
    case StoreCall::kJournal:
      return tx.Journal(JournalEntry{.subject = "order-1"});
    case StoreCall::kPutEvidence:
      return tx.PutEvidence(EvidenceRecord{.consumer = "c", .subject = "order-1", .name = "n"});
    case StoreCall::kSetPosition:
      return tx.SetPosition("in", "p");
    case StoreCall::kGetPosition:
      return tx.GetPosition("in").status();
    case StoreCall::kAppendOutbox:
      return tx.AppendOutbox(OutboxRow{.source = "s", .event_id = "e1", .bytes = "{}"}).status();
    case StoreCall::kPendingOutbox:
      return tx.PendingOutbox(0, 10).status();
    case StoreCall::kMarkOutboxSent: {
      EVIDENT_ASSIGN_OR_RETURN(const OutboxAppend appended,
                               tx.AppendOutbox(OutboxRow{.source = "s", .event_id = "e1"}));
      return tx.MarkOutboxSent(appended.seq, "stream", 1, 10);
    }
    case StoreCall::kRecordOutboxAttempt: {
      EVIDENT_ASSIGN_OR_RETURN(const OutboxAppend appended,
                               tx.AppendOutbox(OutboxRow{.source = "s", .event_id = "e1"}));
      return tx.RecordOutboxAttempt(appended.seq, "timeout", 10);
    }
    case StoreCall::kDeleteSentOutbox:
      return tx.DeleteSentOutbox(10, 10).status();
    case StoreCall::kRemoveRetained:
      return tx.RemoveRetained(RetainedRows{}, 10).status();
    case StoreCall::kRecordRetention:
      return tx.RecordRetention(RetentionRun{.at_ms = 20, .horizon_ms = 10});
    case StoreCall::kForgetLedgerDigests:
      return tx.ForgetLedgerDigests(10, "", 10).status();
    case StoreCall::kPushSet:
      return tx.PushContracts(StoredContracts{.version = 1, .settings = "{}", .files = "{}"})
          .status();
    case StoreCall::kInsertIntent:
      return tx.InsertIntent(EffectIntent{.key = "k"}).status();
    case StoreCall::kFindIntent:
      return tx.FindIntent("k").status();
    case StoreCall::kDueIntents:
      return tx.DueIntents(10, 10).status();
    case StoreCall::kUpdateIntent: {
      EVIDENT_RETURN_IF_ERROR(tx.InsertIntent(EffectIntent{.key = "k"}).status());
      return tx.UpdateIntent(EffectIntent{.key = "k", .state = EffectState::kDone}, 1);
    }
    case StoreCall::kLogIntent: {
      EVIDENT_RETURN_IF_ERROR(tx.InsertIntent(EffectIntent{.key = "k"}).status());
      return tx.LogIntent(EffectLogEntry{.key = "k", .by = "runner"});
    }
    case StoreCall::kLatestIntentOf:
      return tx.LatestIntentOf("c", "order-1", "e").status();
    case StoreCall::kInsertCompensation:
      return tx.InsertCompensation(CompensationRecord{.key = "c"}).status();
    case StoreCall::kUpdateCompensation: {
      EVIDENT_RETURN_IF_ERROR(tx.InsertCompensation(CompensationRecord{.key = "c"}).status());
      return tx.UpdateCompensation(CompensationRecord{.key = "c", .detail = "d"});
    }
    case StoreCall::kCompensationsOfIntent:
      return tx.CompensationsOfIntent("k").status();
    case StoreCall::kInsertCorrection:
      return tx.InsertCorrection(ProjectionCorrection{.consumer = "c", .subject = "order-1"});
    case StoreCall::kWillDecide:
      return tx.WillDecide({"c"});
    case StoreCall::kWillDecideSubject:
      return tx.WillDecideSubject("c", "s");
    case StoreCall::kReadProjectionLocked: {
      Projection out;
      return tx.ReadProjectionLocked("c", "order-1", out).status();
    }
    case StoreCall::kParkOutbox: {
      EVIDENT_ASSIGN_OR_RETURN(const OutboxAppend appended,
                               tx.AppendOutbox(OutboxRow{.source = "s", .event_id = "e1"}));
      return tx.ParkOutbox(appended.seq, "held", 10);
    }
    case StoreCall::kUnparkOutbox: {
      EVIDENT_ASSIGN_OR_RETURN(const OutboxAppend appended,
                               tx.AppendOutbox(OutboxRow{.source = "s", .event_id = "e1"}));
      EVIDENT_RETURN_IF_ERROR(tx.ParkOutbox(appended.seq, "held", 10));
      return tx.UnparkOutbox(appended.seq);
    }
    case StoreCall::kClaimOutbox:
      return tx.ClaimOutbox(10, 1, 1000, 10).status();
    case StoreCall::kJoinGroup:
      return tx.JoinGroup("g", "m", 1, 10, 1000).status();
    case StoreCall::kLeaveGroup:
      return tx.LeaveGroup("g", "m");
    case StoreCall::kAcquireLease:
      return tx.AcquireLease("g", 0, "m", 10, 1000).status();
    case StoreCall::kRenewLease:
      return tx.RenewLease("g", 0, "m", 1, 1000).status();
    case StoreCall::kReleaseLease:
      return tx.ReleaseLease("g", 0, "m", 1);
    case StoreCall::kFenceLease:
      return tx.FenceLease("g", 0, "m", 1, 5, 0, 0);
    case StoreCall::kSeizeLease:
      return tx.SeizeLease("g", 0, "m", 10).status();
    case StoreCall::kIntendOnce:
      return tx.IntendOnce(EffectIntent{.key = "k"}, "trigger");
    case StoreCall::kRecordCompensation:
      return tx.RecordCompensation(CompensationRecord{.key = "c"});
    case StoreCall::kRecordGap:
      return tx.RecordGap(GapRecord{.consumer = "c", .subject = "order-1"});
    default:
      return Status::Internal("not a transaction call");
  }
}

Status Look(Snapshot& snapshot, StoreCall call) {
  switch (call) {
    case StoreCall::kFindProjection:
      return snapshot.FindProjection("c", "order-1").status();
    case StoreCall::kProjectionsOf:
      return snapshot.ProjectionsOf("order-1").status();
    case StoreCall::kLedgerOf:
      return snapshot.LedgerOf("c", "order-1").status();
    case StoreCall::kDeferredOf:
      return snapshot.DeferredOf("c", "order-1").status();
    case StoreCall::kAllDeferred:
      return snapshot.AllDeferred().status();
    case StoreCall::kQuarantineOf:
      return snapshot.QuarantineOf("order-1").status();
    case StoreCall::kJournalOf:
      return snapshot.JournalOf("c", "order-1").status();
    case StoreCall::kEvidenceOf:
      return snapshot.EvidenceOf("c", "order-1").status();
    case StoreCall::kCounts:
      return snapshot.Counts().status();
    case StoreCall::kRetainable:
      return snapshot.Retainable(RetainedKind::kJournal, 10, 0, 10).status();
    case StoreCall::kCountRetainable:
      return snapshot.CountRetainable(RetainedKind::kOutbox, 10).status();
    case StoreCall::kRetainableLedger:
      return snapshot.RetainableLedger(10, LedgerKey{}, 10).status();
    case StoreCall::kCountLedgerDigests:
      return snapshot.CountLedgerDigests(10).status();
    case StoreCall::kLatestRetention:
      return snapshot.LatestRetention().status();
    case StoreCall::kLatestSetVersion:
      return snapshot.LatestContractsVersion().status();
    case StoreCall::kSetAt:
      return snapshot.ContractsAt(0).status();
    case StoreCall::kSetHistory:
      return snapshot.ContractsHistory(10).status();
    case StoreCall::kOutboxRows:
      return snapshot.OutboxRows(OutboxSelect::kAll, 0).status();
    case StoreCall::kOutboxStatsNow:
      return snapshot.OutboxStatsNow(10).status();
    case StoreCall::kFindOutbox:
      return snapshot.FindOutbox("s", "e1").status();
    case StoreCall::kOutboxOfSubject:
      return snapshot.OutboxOfSubject("s", "order-1", 0).status();
    case StoreCall::kListQuarantine:
      return snapshot.ListQuarantine(QuarantineFilter{}).status();
    case StoreCall::kAuditOf:
      return snapshot.AuditOf(1).status();
    case StoreCall::kGapRecordsOf:
      return snapshot.GapRecordsOf("c", "order-1").status();
    case StoreCall::kOpenGapRecords:
      return snapshot.OpenGapRecords().status();
    case StoreCall::kListIntents:
      return snapshot.ListIntents(EffectFilter{}).status();
    case StoreCall::kIntentLogOf:
      return snapshot.IntentLogOf("k").status();
    case StoreCall::kListCompensations:
      return snapshot.ListCompensations("", "").status();
    case StoreCall::kCorrectionsOf:
      return snapshot.CorrectionsOf("c", "order-1").status();
    case StoreCall::kGroupLeases:
      return snapshot.GroupLeases("g").status();
    case StoreCall::kGroupMembers:
      return snapshot.GroupMembers("g").status();
    case StoreCall::kGroupPartitionCount:
      return snapshot.GroupPartitionCount("g").status();
    default:
      return Status::Internal("not a snapshot call");
  }
}

bool IsSnapshotCall(StoreCall call) {
  return (call >= StoreCall::kFindProjection && call <= StoreCall::kCounts) ||
         call == StoreCall::kOutboxRows || call == StoreCall::kOutboxStatsNow ||
         call == StoreCall::kListQuarantine || call == StoreCall::kAuditOf ||
         call == StoreCall::kGapRecordsOf || call == StoreCall::kOpenGapRecords ||
         call == StoreCall::kListIntents || call == StoreCall::kIntentLogOf ||
         call == StoreCall::kListCompensations || call == StoreCall::kFindOutbox ||
         call == StoreCall::kOutboxOfSubject || call == StoreCall::kCorrectionsOf ||
         call == StoreCall::kGroupLeases || call == StoreCall::kGroupMembers ||
         call == StoreCall::kGroupPartitionCount || call == StoreCall::kRead ||
         call == StoreCall::kRetainable || call == StoreCall::kCountRetainable ||
         call == StoreCall::kLatestRetention || call == StoreCall::kLatestSetVersion ||
         call == StoreCall::kSetAt || call == StoreCall::kSetHistory ||
         call == StoreCall::kRetainableLedger || call == StoreCall::kCountLedgerDigests;
}

Status CallOnce(Store& store, StoreCall call) {
  if (call == StoreCall::kWaitForOutbox) return store.WaitForOutbox(0).status();
  if (call == StoreCall::kSpaceNow) return store.SpaceNow().status();
  if (call == StoreCall::kReturnSpace) return store.ReturnSpace(10).status();
  if (call == StoreCall::kCompact) return store.Compact();
  if (IsSnapshotCall(call)) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    return call == StoreCall::kRead ? Status::Ok() : Look(*snapshot, call);
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  if (call == StoreCall::kBegin) return tx->Rollback();
  if (call == StoreCall::kCommit) return tx->Commit();
  const Status status = Transact(*tx, call);
  EVIDENT_RETURN_IF_ERROR(tx->Rollback());
  return status;
}

std::unique_ptr<FaultStore> NewFaultStore(std::vector<int64_t>* slept = nullptr) {
  auto inner = OpenMemoryStore(NewMemoryDatabase());
  EXPECT_TRUE(inner.ok());
  std::function<void(int64_t)> sleep;
  if (slept != nullptr) sleep = [slept](int64_t ms) { slept->push_back(ms); };
  return std::make_unique<FaultStore>(std::move(inner).value(), std::move(sleep));
}

TEST(StoreCallName, EveryCallHasItsOwnName) {
  std::set<std::string_view> names;
  for (StoreCall call : kEveryCall) names.insert(StoreCallName(call));
  EXPECT_EQ(names.size(), static_cast<size_t>(kStoreCallCount));
  EXPECT_EQ(StoreCallName(StoreCall::kInsertLedger), "insert-ledger");
  EXPECT_EQ(StoreCallName(StoreCall::kCounts), "counts");
}

// Every kind of call: its fault fires on the 2nd call of that kind and on no other.
TEST(FaultStore, EachFaultFiresOnExactlyItsNthCall) {
  for (StoreCall call : kEveryCall) {
    SCOPED_TRACE(std::string(StoreCallName(call)));
    auto store = NewFaultStore();
    store->Add({.call = call, .nth = 2, .code = Code::kIoError});
    // The memory store's own answer (consumer groups: refused, it has none) reaches the caller.
    const Status own = CallOnce(*store, call);
    EXPECT_TRUE(own.ok() || own.code() == Code::kFailedPrecondition) << own.ToString();
    EXPECT_EQ(store->faults_fired(), 0);
    const Status failed = CallOnce(*store, call);
    EXPECT_EQ(failed.code(), Code::kIoError);
    EXPECT_EQ(failed.message(), "injected fault: " + std::string(StoreCallName(call)) + " #2");
    EXPECT_EQ(store->faults_fired(), 1);
    EXPECT_EQ(CallOnce(*store, call).code(), own.code());
    EXPECT_EQ(store->calls(call), 3);
    EXPECT_EQ(store->faults_fired(), 1);
  }
}

// A backend's answer to a call with a default in store.h passes through the fault store as the
// backend gives it (before the forwarding bases, these three fell to the defaults: a fault
// store around PostgreSQL told the relay its claims were not shared).
TEST(FaultStore, ACallWithADefaultInStoreHReachesTheWrappedBackend) {
  class Sharing final : public StoreWrapper {
   public:
    using StoreWrapper::StoreWrapper;
    bool BatchLoadPays() const override { return true; }
    bool RelaysShare() const override { return true; }
    Result<bool> WaitForOutbox(int64_t /*timeout_ms*/) override { return true; }
  };
  FaultStore store(std::make_unique<Sharing>(OpenMemoryStore(NewMemoryDatabase()).value()));
  EXPECT_TRUE(store.BatchLoadPays());
  EXPECT_TRUE(store.RelaysShare());
  EXPECT_TRUE(store.WaitForOutbox(0).value());
  store.Add({.call = StoreCall::kWaitForOutbox, .nth = 2, .code = Code::kUnavailable});
  EXPECT_EQ(store.WaitForOutbox(0).status().code(), Code::kUnavailable);
}

// A failed call never reaches the wrapped store: nothing of it is written.
TEST(FaultStore, AFailedWriteWritesNothing) {
  auto store = NewFaultStore();
  store->Add({.call = StoreCall::kInsertLedger, .nth = 1, .code = Code::kIoError});
  store->Add({.call = StoreCall::kSetPosition, .nth = 1, .code = Code::kIoError});
  auto tx = std::move(store->Begin()).value();
  EXPECT_EQ(tx->InsertLedger(Receipt("e1")).status().code(), Code::kIoError);
  EXPECT_EQ(tx->SetPosition("in", "p").code(), Code::kIoError);
  EXPECT_EQ(tx->InsertLedger(Receipt("e2")).value(), Insert::kInserted);  // goes on
  ASSERT_TRUE(tx->Commit().ok());
  tx = std::move(store->Begin()).value();
  EXPECT_FALSE(tx->FindLedger("c", "s", "e1").value().has_value());
  EXPECT_TRUE(tx->FindLedger("c", "s", "e2").value().has_value());
  EXPECT_FALSE(tx->GetPosition("in").value().has_value());
}

// A failed commit drops the transaction's work (as a crash before the commit record would) and
// ends it: the store takes the next transaction, which sees none of it.
TEST(FaultStore, AFailedCommitLeavesNothing) {
  auto store = NewFaultStore();
  store->Add({.call = StoreCall::kCommit, .nth = 1, .code = Code::kUnavailable});
  auto tx = std::move(store->Begin()).value();
  EXPECT_EQ(tx->InsertLedger(Receipt("e1")).value(), Insert::kInserted);
  ASSERT_TRUE(tx->PutProjection(MakeProjection(), std::nullopt).ok());
  ASSERT_TRUE(tx->Quarantine(QuarantineRecord{.subject = "order-1"}).ok());
  ASSERT_TRUE(tx->SetPosition("in", "p").ok());
  const Status failed = tx->Commit();
  EXPECT_EQ(failed.code(), Code::kUnavailable);
  EXPECT_EQ(failed.message(), "injected fault: commit #1");
  tx.reset();
  auto snapshot = std::move(store->Read()).value();
  const std::vector<std::pair<std::string, int64_t>> zero = {
      {"ledger", 0},  {"projection", 0}, {"deferred", 0},    {"quarantine", 0},
      {"journal", 0}, {"effect", 0},     {"compensation", 0}};
  EXPECT_EQ(snapshot->Counts().value(), zero);
  EXPECT_FALSE(snapshot->GetPosition("in").value().has_value());
  snapshot.reset();
  // The next commit goes through.
  tx = std::move(store->Begin()).value();
  EXPECT_EQ(tx->InsertLedger(Receipt("e1")).value(), Insert::kInserted);
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(store->calls(StoreCall::kCommit), 2);
}

// A commit failed after it took effect (a connection lost after the server committed): the
// caller hears the error, and finds its work there when it tries again.
TEST(FaultStore, ACommitFailedAfterItTookEffectKeepsItsWork) {
  auto store = NewFaultStore();
  store->Add({.call = StoreCall::kCommit, .nth = 1, .code = Code::kIoError, .after_call = true});
  auto tx = std::move(store->Begin()).value();
  EXPECT_EQ(tx->InsertLedger(Receipt("e1")).value(), Insert::kInserted);
  ASSERT_TRUE(tx->SetPosition("in", "p").ok());
  const Status failed = tx->Commit();
  EXPECT_EQ(failed.code(), Code::kIoError);
  EXPECT_EQ(failed.message(), "injected fault: commit #1 (after it took effect)");
  tx.reset();
  tx = std::move(store->Begin()).value();
  EXPECT_EQ(tx->InsertLedger(Receipt("e1")).value(), Insert::kAlreadyThere);
  EXPECT_EQ(tx->GetPosition("in").value(), std::optional<std::string>("p"));
  ASSERT_TRUE(tx->Rollback().ok());
  EXPECT_EQ(store->faults_fired(), 1);
}

// Faults that fail Begin or Read hand out nothing: the store stays free.
TEST(FaultStore, AFailedBeginOrReadOpensNothing) {
  auto store = NewFaultStore();
  store->Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kUnavailable});
  store->Add({.call = StoreCall::kRead, .nth = 1, .code = Code::kIoError});
  EXPECT_EQ(store->Begin().status().code(), Code::kUnavailable);
  EXPECT_EQ(store->Read().status().code(), Code::kIoError);
  EXPECT_TRUE(store->Begin().ok());  // destroyed at once: rolled back
  EXPECT_TRUE(store->Read().ok());
}

TEST(FaultStore, DelaysGoThroughTheSleepFunction) {
  std::vector<int64_t> slept;
  auto store = NewFaultStore(&slept);
  store->Add({.call = StoreCall::kFindLedger, .nth = 1, .code = Code::kOk, .delay_ms = 25});
  store->Add({.call = StoreCall::kCommit, .nth = 1, .code = Code::kIoError, .delay_ms = 7});
  auto tx = std::move(store->Begin()).value();
  EXPECT_TRUE(tx->FindLedger("c", "s", "e1").ok());  // delayed, not failed
  EXPECT_EQ(slept, (std::vector<int64_t>{25}));
  EXPECT_TRUE(tx->FindLedger("c", "s", "e1").ok());  // the 2nd call: no delay
  EXPECT_EQ(slept, (std::vector<int64_t>{25}));
  EXPECT_EQ(tx->Commit().code(), Code::kIoError);  // delayed, then failed
  EXPECT_EQ(slept, (std::vector<int64_t>{25, 7}));
  EXPECT_EQ(store->faults_fired(), 2);
}

// Without a sleep function a delay is skipped; the fault still counts as fired.
TEST(FaultStore, DelaysWithoutASleepFunctionAreSkipped) {
  auto store = NewFaultStore();
  store->Add({.call = StoreCall::kRead, .nth = 1, .code = Code::kOk, .delay_ms = 1000000});
  EXPECT_TRUE(store->Read().ok());
  EXPECT_EQ(store->faults_fired(), 1);
}

// Faults naming the same call: their delays add up, the first error listed wins.
TEST(FaultStore, FaultsOnOneCallAddTheirDelaysAndTheFirstErrorWins) {
  std::vector<int64_t> slept;
  auto store = NewFaultStore(&slept);
  store->Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kOk, .delay_ms = 5});
  store->Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kIoError, .delay_ms = 3});
  store->Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kUnavailable});
  EXPECT_EQ(store->Begin().status().code(), Code::kIoError);
  EXPECT_EQ(slept, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(store->faults_fired(), 3);
}

// Calls are counted over the store's life, across transactions and snapshots; FindLedger and
// GetPosition count both kinds of handle. Clear drops the faults and keeps the counts.
TEST(FaultStore, CallsAreCountedOverTheStoresLife) {
  auto store = NewFaultStore();
  for (int i = 0; i < 2; ++i) {
    auto tx = std::move(store->Begin()).value();
    EXPECT_TRUE(tx->GetPosition("in").ok());
    EXPECT_TRUE(tx->FindLedger("c", "s", "e1").ok());
    EXPECT_TRUE(tx->Commit().ok());
  }
  {
    auto snapshot = std::move(store->Read()).value();
    EXPECT_TRUE(snapshot->GetPosition("in").ok());
    EXPECT_TRUE(snapshot->FindLedger("c", "s", "e1").ok());
  }
  EXPECT_EQ(store->calls(StoreCall::kBegin), 2);
  EXPECT_EQ(store->calls(StoreCall::kCommit), 2);
  EXPECT_EQ(store->calls(StoreCall::kRead), 1);
  EXPECT_EQ(store->calls(StoreCall::kGetPosition), 3);
  EXPECT_EQ(store->calls(StoreCall::kFindLedger), 3);
  EXPECT_EQ(store->calls(StoreCall::kLoad), 0);
  store->Add({.call = StoreCall::kBegin, .nth = 3, .code = Code::kIoError});
  store->Clear();
  EXPECT_TRUE(store->Begin().ok());
  EXPECT_EQ(store->calls(StoreCall::kBegin), 3);
  EXPECT_EQ(store->faults_fired(), 0);
}

}  // namespace
}  // namespace evident
