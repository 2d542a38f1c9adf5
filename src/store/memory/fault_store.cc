// FaultStore (store_memory.h): any Store, with chosen calls failed or delayed. Every call of the
// Store, its Transactions and its Snapshots passes through FaultStore::State::Enter, which
// counts it and fires the faults set for that count.
#include <array>
#include <cassert>
#include <utility>
#include <vector>

#include "evident/store_memory.h"

namespace evident {
namespace {

constexpr std::array<std::string_view, kStoreCallCount> kStoreCallNames = {
    "begin",
    "read",
    "commit",
    "load",
    "find-ledger",
    "insert-ledger",
    "mark-applied",
    "count-duplicate",
    "delete-ledger",
    "applied-after",
    "read-projection",
    "put-projection",
    "find-deferred",
    "insert-deferred",
    "delete-deferred",
    "quarantine",
    "journal",
    "put-evidence",
    "set-position",
    "get-position",
    "find-projection",
    "projections-of",
    "ledger-of",
    "deferred-of",
    "all-deferred",
    "quarantine-of",
    "journal-of",
    "evidence-of",
    "counts",
    "append-outbox",
    "pending-outbox",
    "mark-outbox-sent",
    "record-outbox-attempt",
    "delete-sent-outbox",
    "outbox-rows",
    "outbox-stats-now",
    "find-outbox",
    "outbox-of-subject",
    "find-quarantine",
    "set-quarantine-status",
    "audit-quarantine",
    "list-quarantine",
    "audit-of",
    "find-gap",
    "insert-gap",
    "close-gaps",
    "update-gap",
    "gap-records-of",
    "open-gap-records",
    "insert-intent",
    "find-intent",
    "due-intents",
    "update-intent",
    "log-intent",
    "latest-intent-of",
    "insert-compensation",
    "update-compensation",
    "compensations-of-intent",
    "list-intents",
    "intent-log-of",
    "list-compensations",
    "insert-correction",
    "corrections-of",
};

}  // namespace

std::string_view StoreCallName(StoreCall call) {
  return kStoreCallNames[static_cast<size_t>(call)];
}

struct FaultStore::State {
  // Counts the call, sleeps the delays of the faults set for this count, and returns the first
  // of their errors (OK when none fails it).
  Status Enter(StoreCall call) {
    const int64_t count = ++calls[static_cast<size_t>(call)];
    Status failure;
    for (const StoreFault& fault : faults) {
      if (fault.call != call || fault.nth != count) continue;
      ++fired;
      if (fault.delay_ms > 0 && sleep_ms) sleep_ms(fault.delay_ms);
      if (fault.code != Code::kOk && failure.ok()) {
        failure = Status(fault.code, "injected fault: " + std::string(StoreCallName(call)) + " #" +
                                         std::to_string(count));
      }
    }
    return failure;
  }

  std::function<void(int64_t)> sleep_ms;
  std::vector<StoreFault> faults;
  std::array<int64_t, kStoreCallCount> calls{};
  int64_t fired = 0;
};

namespace {

using FaultState = FaultStore::State;

// Counts the call and returns its injected failure, if any, from the calling method.
#define EVIDENT_FAULT_ENTER(call) EVIDENT_RETURN_IF_ERROR(state_->Enter(call))

class FaultTransaction final : public Transaction {
 public:
  FaultTransaction(std::unique_ptr<Transaction> inner, std::shared_ptr<FaultState> state)
      : inner_(std::move(inner)), state_(std::move(state)) {}

  // A failed commit drops the work, as a crash before the commit record would.
  Status Commit() override {
    assert(inner_ != nullptr && "transaction used after Commit or Rollback");
    Status injected = state_->Enter(StoreCall::kCommit);
    std::unique_ptr<Transaction> inner = std::move(inner_);
    if (!injected.ok()) {
      (void)inner->Rollback();  // the injected failure is the answer either way
      return injected;
    }
    return inner->Commit();
  }
  Status Rollback() override {
    assert(inner_ != nullptr && "transaction used after Commit or Rollback");
    std::unique_ptr<Transaction> inner = std::move(inner_);
    return inner->Rollback();
  }

  Status WillDecide(const std::vector<std::string>& consumers) override {
    return inner_->WillDecide(consumers);
  }
  Result<BatchRows> Load(const BatchKeys& keys) override {
    EVIDENT_FAULT_ENTER(StoreCall::kLoad);
    return inner_->Load(keys);
  }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindLedger);
    return inner_->FindLedger(consumer, source, event_id);
  }
  Result<Insert> InsertLedger(const LedgerEntry& entry) override {
    EVIDENT_FAULT_ENTER(StoreCall::kInsertLedger);
    return inner_->InsertLedger(entry);
  }
  Status DeleteLedger(std::string_view consumer, std::string_view source,
                      std::string_view event_id) override {
    EVIDENT_FAULT_ENTER(StoreCall::kDeleteLedger);
    return inner_->DeleteLedger(consumer, source, event_id);
  }
  Result<std::optional<LedgerEntry>> AppliedAfter(std::string_view consumer,
                                                  std::string_view subject,
                                                  int64_t after_projection_version,
                                                  const std::vector<std::string>& types) override {
    EVIDENT_FAULT_ENTER(StoreCall::kAppliedAfter);
    return inner_->AppliedAfter(consumer, subject, after_projection_version, types);
  }
  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) override {
    EVIDENT_FAULT_ENTER(StoreCall::kMarkApplied);
    return inner_->MarkApplied(consumer, source, event_id, projection_version, committed_at_ms);
  }
  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) override {
    EVIDENT_FAULT_ENTER(StoreCall::kCountDuplicate);
    return inner_->CountDuplicate(consumer, source, event_id, at_ms);
  }
  Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                              Projection& out) override {
    EVIDENT_FAULT_ENTER(StoreCall::kReadProjection);
    return inner_->ReadProjection(consumer, subject, out);
  }
  Status PutProjection(const Projection& projection,
                       std::optional<int64_t> expected_version) override {
    EVIDENT_FAULT_ENTER(StoreCall::kPutProjection);
    return inner_->PutProjection(projection, expected_version);
  }
  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindDeferred);
    return inner_->FindDeferred(consumer, subject, subject_version);
  }
  Result<Insert> InsertDeferred(const DeferredEvent& event) override {
    EVIDENT_FAULT_ENTER(StoreCall::kInsertDeferred);
    return inner_->InsertDeferred(event);
  }
  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) override {
    EVIDENT_FAULT_ENTER(StoreCall::kDeleteDeferred);
    return inner_->DeleteDeferred(consumer, subject, subject_version);
  }
  Result<QuarantineKept> Quarantine(const QuarantineRecord& record) override {
    EVIDENT_FAULT_ENTER(StoreCall::kQuarantine);
    return inner_->Quarantine(record);
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindQuarantine);
    return inner_->FindQuarantine(id);
  }
  Status SetQuarantineStatus(int64_t id, QuarantineStatus status) override {
    EVIDENT_FAULT_ENTER(StoreCall::kSetQuarantineStatus);
    return inner_->SetQuarantineStatus(id, status);
  }
  Status AuditQuarantine(const QuarantineAudit& entry) override {
    EVIDENT_FAULT_ENTER(StoreCall::kAuditQuarantine);
    return inner_->AuditQuarantine(entry);
  }
  Result<std::optional<GapRecord>> FindGap(std::string_view consumer, std::string_view subject,
                                           int64_t expected_version) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindGap);
    return inner_->FindGap(consumer, subject, expected_version);
  }
  Result<Insert> InsertGap(const GapRecord& record) override {
    EVIDENT_FAULT_ENTER(StoreCall::kInsertGap);
    return inner_->InsertGap(record);
  }
  Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                            int64_t through_version, const GapClosing& closing) override {
    EVIDENT_FAULT_ENTER(StoreCall::kCloseGaps);
    return inner_->CloseGaps(consumer, subject, through_version, closing);
  }
  Status UpdateGap(const GapRecord& record) override {
    EVIDENT_FAULT_ENTER(StoreCall::kUpdateGap);
    return inner_->UpdateGap(record);
  }
  Status Journal(const JournalEntry& entry) override {
    EVIDENT_FAULT_ENTER(StoreCall::kJournal);
    return inner_->Journal(entry);
  }
  Status PutEvidence(const EvidenceRecord& record) override {
    EVIDENT_FAULT_ENTER(StoreCall::kPutEvidence);
    return inner_->PutEvidence(record);
  }
  Status SetPosition(std::string_view source, std::string_view position) override {
    EVIDENT_FAULT_ENTER(StoreCall::kSetPosition);
    return inner_->SetPosition(source, position);
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    EVIDENT_FAULT_ENTER(StoreCall::kGetPosition);
    return inner_->GetPosition(source);
  }
  Result<OutboxAppend> AppendOutbox(const OutboxRow& row) override {
    EVIDENT_FAULT_ENTER(StoreCall::kAppendOutbox);
    return inner_->AppendOutbox(row);
  }
  Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kPendingOutbox);
    return inner_->PendingOutbox(after_seq, rows_max);
  }
  Status MarkOutboxSent(int64_t seq, std::string_view stream,
                        std::optional<int64_t> stream_sequence, int64_t at_ms) override {
    EVIDENT_FAULT_ENTER(StoreCall::kMarkOutboxSent);
    return inner_->MarkOutboxSent(seq, stream, stream_sequence, at_ms);
  }
  Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) override {
    EVIDENT_FAULT_ENTER(StoreCall::kRecordOutboxAttempt);
    return inner_->RecordOutboxAttempt(seq, error, at_ms);
  }
  Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) override {
    return inner_->ParkOutbox(seq, reason, at_ms);
  }
  Status UnparkOutbox(int64_t seq) override { return inner_->UnparkOutbox(seq); }
  Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kDeleteSentOutbox);
    return inner_->DeleteSentOutbox(sent_before_ms, rows_max);
  }
  Result<Insert> InsertIntent(const EffectIntent& intent) override {
    EVIDENT_FAULT_ENTER(StoreCall::kInsertIntent);
    return inner_->InsertIntent(intent);
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindIntent);
    return inner_->FindIntent(key);
  }
  Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kDueIntents);
    return inner_->DueIntents(now_ms, rows_max);
  }
  Status UpdateIntent(const EffectIntent& intent, int64_t expected_revision) override {
    EVIDENT_FAULT_ENTER(StoreCall::kUpdateIntent);
    return inner_->UpdateIntent(intent, expected_revision);
  }
  Status LogIntent(const EffectLogEntry& entry) override {
    EVIDENT_FAULT_ENTER(StoreCall::kLogIntent);
    return inner_->LogIntent(entry);
  }
  Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                     std::string_view subject,
                                                     std::string_view effect) override {
    EVIDENT_FAULT_ENTER(StoreCall::kLatestIntentOf);
    return inner_->LatestIntentOf(consumer, subject, effect);
  }
  Result<Insert> InsertCompensation(const CompensationRecord& record) override {
    EVIDENT_FAULT_ENTER(StoreCall::kInsertCompensation);
    return inner_->InsertCompensation(record);
  }
  Status UpdateCompensation(const CompensationRecord& record) override {
    EVIDENT_FAULT_ENTER(StoreCall::kUpdateCompensation);
    return inner_->UpdateCompensation(record);
  }
  Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) override {
    EVIDENT_FAULT_ENTER(StoreCall::kCompensationsOfIntent);
    return inner_->CompensationsOfIntent(key);
  }
  Status InsertCorrection(const ProjectionCorrection& correction) override {
    EVIDENT_FAULT_ENTER(StoreCall::kInsertCorrection);
    return inner_->InsertCorrection(correction);
  }

 private:
  std::unique_ptr<Transaction> inner_;  // null once finished
  std::shared_ptr<FaultState> state_;
};

class FaultSnapshot final : public Snapshot {
 public:
  FaultSnapshot(std::unique_ptr<Snapshot> inner, std::shared_ptr<FaultState> state)
      : inner_(std::move(inner)), state_(std::move(state)) {}

  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindProjection);
    return inner_->FindProjection(consumer, subject);
  }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindLedger);
    return inner_->FindLedger(consumer, source, event_id);
  }
  Result<Rows<Projection>> ProjectionsOf(std::string_view subject, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kProjectionsOf);
    return inner_->ProjectionsOf(subject, rows_max);
  }
  Result<Rows<LedgerEntry>> LedgerOf(std::string_view consumer, std::string_view subject,
                                     int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kLedgerOf);
    return inner_->LedgerOf(consumer, subject, rows_max);
  }
  Result<Rows<DeferredEvent>> DeferredOf(std::string_view consumer, std::string_view subject,
                                         int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kDeferredOf);
    return inner_->DeferredOf(consumer, subject, rows_max);
  }
  Result<Rows<DeferredEvent>> AllDeferred(int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kAllDeferred);
    return inner_->AllDeferred(rows_max);
  }
  Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kQuarantineOf);
    return inner_->QuarantineOf(subject, rows_max);
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindQuarantine);
    return inner_->FindQuarantine(id);
  }
  Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                QuarantineCursor after, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kListQuarantine);
    return inner_->ListQuarantine(filter, after, rows_max);
  }
  Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kAuditOf);
    return inner_->AuditOf(record_id, rows_max);
  }
  Result<Rows<GapRecord>> GapRecordsOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kGapRecordsOf);
    return inner_->GapRecordsOf(consumer, subject, rows_max);
  }
  Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kOpenGapRecords);
    return inner_->OpenGapRecords(rows_max);
  }
  Result<Rows<JournalEntry>> JournalOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kJournalOf);
    return inner_->JournalOf(consumer, subject, rows_max);
  }
  Result<Rows<EvidenceRecord>> EvidenceOf(std::string_view consumer, std::string_view subject,
                                          int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kEvidenceOf);
    return inner_->EvidenceOf(consumer, subject, rows_max);
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    EVIDENT_FAULT_ENTER(StoreCall::kGetPosition);
    return inner_->GetPosition(source);
  }
  Result<std::vector<std::pair<std::string, int64_t>>> Counts() override {
    EVIDENT_FAULT_ENTER(StoreCall::kCounts);
    return inner_->Counts();
  }
  Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                     int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kOutboxRows);
    return inner_->OutboxRows(select, after_seq, rows_max);
  }
  Result<OutboxStats> OutboxStatsNow(int64_t now_ms) override {
    EVIDENT_FAULT_ENTER(StoreCall::kOutboxStatsNow);
    return inner_->OutboxStatsNow(now_ms);
  }
  Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                              std::string_view event_id) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindOutbox);
    return inner_->FindOutbox(source, event_id);
  }
  Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                          int64_t from_version, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kOutboxOfSubject);
    return inner_->OutboxOfSubject(source, subject, from_version, rows_max);
  }
  Result<Rows<ProjectionCorrection>> CorrectionsOf(std::string_view consumer,
                                                   std::string_view subject,
                                                   int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kCorrectionsOf);
    return inner_->CorrectionsOf(consumer, subject, rows_max);
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    EVIDENT_FAULT_ENTER(StoreCall::kFindIntent);
    return inner_->FindIntent(key);
  }
  Result<Rows<EffectIntent>> ListIntents(const EffectFilter& filter, int64_t after_seq,
                                         int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kListIntents);
    return inner_->ListIntents(filter, after_seq, rows_max);
  }
  Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key, int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kIntentLogOf);
    return inner_->IntentLogOf(key, rows_max);
  }
  Result<Rows<CompensationRecord>> ListCompensations(std::string_view consumer,
                                                     std::string_view subject, int64_t after_seq,
                                                     int64_t rows_max) override {
    EVIDENT_FAULT_ENTER(StoreCall::kListCompensations);
    return inner_->ListCompensations(consumer, subject, after_seq, rows_max);
  }

 private:
  std::unique_ptr<Snapshot> inner_;
  std::shared_ptr<FaultState> state_;
};

#undef EVIDENT_FAULT_ENTER

}  // namespace

FaultStore::FaultStore(std::unique_ptr<Store> inner, std::function<void(int64_t)> sleep_ms)
    : inner_(std::move(inner)), state_(std::make_shared<State>()) {
  assert(inner_ != nullptr);
  state_->sleep_ms = std::move(sleep_ms);
}

FaultStore::~FaultStore() = default;

void FaultStore::Add(const StoreFault& fault) {
  assert(fault.nth >= 1 && fault.delay_ms >= 0);
  state_->faults.push_back(fault);
}

void FaultStore::Clear() { state_->faults.clear(); }

int64_t FaultStore::calls(StoreCall call) const { return state_->calls[static_cast<size_t>(call)]; }

int64_t FaultStore::faults_fired() const { return state_->fired; }

Result<std::unique_ptr<Transaction>> FaultStore::Begin() {
  EVIDENT_RETURN_IF_ERROR(state_->Enter(StoreCall::kBegin));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> inner, inner_->Begin());
  return std::unique_ptr<Transaction>(new FaultTransaction(std::move(inner), state_));
}

Result<std::unique_ptr<Snapshot>> FaultStore::Read() {
  EVIDENT_RETURN_IF_ERROR(state_->Enter(StoreCall::kRead));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> inner, inner_->Read());
  return std::unique_ptr<Snapshot>(new FaultSnapshot(std::move(inner), state_));
}

}  // namespace evident
