// evident/store_wrapper.h — forwarding bases for wrappers of a Store, its Transactions and its
// Snapshots (as LevelDB's EnvWrapper): a wrapper derives from them and overrides only what it
// changes, so every other call reaches the wrapped backend, the calls with a default in store.h
// included, and a wrapper never changes a backend's behaviour by omission. Each forwarded call
// first asks Enter(call), which a wrapper that watches or refuses calls (FaultStore) overrides
// alone. Generated from store.h's virtual calls; `scripts/check-store-wrapper.py` (ctest
// store_wrapper_complete) fails when a call of store.h is not forwarded here.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "evident/store.h"

namespace evident {

// Every forwarded call of a Store, a Transaction or a Snapshot, by kind. FindLedger,
// FindQuarantine, FindIntent and GetPosition count the calls of both a Transaction and a
// Snapshot.
enum class StoreCall : uint8_t {
  kBegin,
  kRead,
  kCommit,
  kLoad,
  kFindLedger,
  kInsertLedger,
  kMarkApplied,
  kCountDuplicate,
  kDeleteLedger,
  kAppliedAfter,
  kReadProjection,
  kPutProjection,
  kFindDeferred,
  kInsertDeferred,
  kDeleteDeferred,
  kQuarantine,
  kJournal,
  kPutEvidence,
  kSetPosition,
  kGetPosition,
  // Snapshot reads.
  kFindProjection,
  kProjectionsOf,
  kLedgerOf,
  kDeferredOf,
  kAllDeferred,
  kQuarantineOf,
  kJournalOf,
  kEvidenceOf,
  kCounts,
  // The outbox (transaction calls, then snapshot reads).
  kAppendOutbox,
  kPendingOutbox,
  kMarkOutboxSent,
  kRecordOutboxAttempt,
  kDeleteSentOutbox,
  kOutboxRows,
  kOutboxStatsNow,
  kFindOutbox,
  kOutboxOfSubject,
  // The quarantine beyond Quarantine and QuarantineOf (transaction calls, then snapshot reads;
  // FindQuarantine is both).
  kFindQuarantine,
  kSetQuarantineStatus,
  kAuditQuarantine,
  kListQuarantine,
  kAuditOf,
  // Gap records (transaction calls, then snapshot reads).
  kFindGap,
  kInsertGap,
  kCloseGaps,
  kUpdateGap,
  kGapRecordsOf,
  kOpenGapRecords,
  // Effects and compensations (transaction calls, then snapshot reads; FindIntent is both).
  kInsertIntent,
  kFindIntent,
  kDueIntents,
  kUpdateIntent,
  kLogIntent,
  kLatestIntentOf,
  kInsertCompensation,
  kUpdateCompensation,
  kCompensationsOfIntent,
  kListIntents,
  kIntentLogOf,
  kListCompensations,
  // Corrections of projections (the transaction call, then the snapshot read).
  kInsertCorrection,
  kCorrectionsOf,
  // Calls with a default in store.h, counted since the forwarding bases (store_wrapper.h).
  kWillDecide,
  kReadProjectionLocked,
  kParkOutbox,
  kUnparkOutbox,
  kClaimOutbox,
  kJoinGroup,
  kLeaveGroup,
  kAcquireLease,
  kRenewLease,
  kReleaseLease,
  kFenceLease,
  kSeizeLease,
  kIntendOnce,
  kRecordCompensation,
  kRecordGap,
  kGroupLeases,
  kGroupMembers,
  kGroupPartitionCount,
  kWaitForOutbox,
  // Retention (the transaction call, then the snapshot reads).
  kRemoveRetained,
  kRecordRetention,
  kRetainable,
  kCountRetainable,
  kLatestRetention,
  kSpaceNow,
  kReturnSpace,
  kCompact,
  // Contract and consumer sets kept in the store (reads count the calls of both a Transaction and
  // a Snapshot).
  kPushSet,
  kLatestSetVersion,
  kSetAt,
  kSetHistory,
  kWillDecideSubject,
  // The ledger's compact form (retention: the transaction call, then the snapshot reads).
  kForgetLedgerDigests,
  kRetainableLedger,
  kCountLedgerDigests,
};
inline constexpr int kStoreCallCount = 98;
static_assert(static_cast<int>(StoreCall::kCountLedgerDigests) + 1 == kStoreCallCount,
              "kStoreCallCount counts every StoreCall");
std::string_view StoreCallName(StoreCall call);  // "begin", "insert-ledger", "ledger-of", ...

class TransactionWrapper : public Transaction {
 public:
  explicit TransactionWrapper(std::unique_ptr<Transaction> target) : target_(std::move(target)) {}

  Status Commit() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCommit));
    return target_->Commit();
  }
  Status Rollback() override { return target_->Rollback(); }
  Status WillDecide(const std::vector<std::string>& consumers) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kWillDecide));
    return target_->WillDecide(consumers);
  }
  Status WillDecideSubject(std::string_view consumer, std::string_view what) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kWillDecideSubject));
    return target_->WillDecideSubject(consumer, what);
  }
  Result<BatchRows> Load(const BatchKeys& keys) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLoad));
    return target_->Load(keys);
  }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindLedger));
    return target_->FindLedger(consumer, source, event_id);
  }
  Result<Insert> InsertLedger(const LedgerEntry& entry) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kInsertLedger));
    return target_->InsertLedger(entry);
  }
  Status DeleteLedger(std::string_view consumer, std::string_view source,
                      std::string_view event_id) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kDeleteLedger));
    return target_->DeleteLedger(consumer, source, event_id);
  }
  Result<std::optional<LedgerEntry>> AppliedAfter(std::string_view consumer,
                                                  std::string_view subject,
                                                  int64_t after_projection_version,
                                                  const std::vector<std::string>& types) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kAppliedAfter));
    return target_->AppliedAfter(consumer, subject, after_projection_version, types);
  }
  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kMarkApplied));
    return target_->MarkApplied(consumer, source, event_id, projection_version, committed_at_ms);
  }
  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCountDuplicate));
    return target_->CountDuplicate(consumer, source, event_id, at_ms);
  }
  Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                              Projection& out) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kReadProjection));
    return target_->ReadProjection(consumer, subject, out);
  }
  Result<bool> ReadProjectionLocked(std::string_view consumer, std::string_view subject,
                                    Projection& out) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kReadProjectionLocked));
    return target_->ReadProjectionLocked(consumer, subject, out);
  }
  Status PutProjection(const Projection& projection,
                       std::optional<int64_t> expected_version) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kPutProjection));
    return target_->PutProjection(projection, expected_version);
  }
  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindDeferred));
    return target_->FindDeferred(consumer, subject, subject_version);
  }
  Result<Insert> InsertDeferred(const DeferredEvent& event) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kInsertDeferred));
    return target_->InsertDeferred(event);
  }
  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kDeleteDeferred));
    return target_->DeleteDeferred(consumer, subject, subject_version);
  }
  Result<QuarantineKept> Quarantine(const QuarantineRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kQuarantine));
    return target_->Quarantine(record);
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindQuarantine));
    return target_->FindQuarantine(id);
  }
  Result<std::optional<GapRecord>> FindGap(std::string_view consumer, std::string_view subject,
                                           int64_t expected_version) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindGap));
    return target_->FindGap(consumer, subject, expected_version);
  }
  Result<Insert> InsertGap(const GapRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kInsertGap));
    return target_->InsertGap(record);
  }
  Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                            int64_t through_version, const GapClosing& closing) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCloseGaps));
    return target_->CloseGaps(consumer, subject, through_version, closing);
  }
  Status UpdateGap(const GapRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kUpdateGap));
    return target_->UpdateGap(record);
  }
  Status SetQuarantineStatus(int64_t id, QuarantineStatus status) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSetQuarantineStatus));
    return target_->SetQuarantineStatus(id, status);
  }
  Status AuditQuarantine(const QuarantineAudit& entry) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kAuditQuarantine));
    return target_->AuditQuarantine(entry);
  }
  Status Journal(const JournalEntry& entry) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kJournal));
    return target_->Journal(entry);
  }
  Status PutEvidence(const EvidenceRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kPutEvidence));
    return target_->PutEvidence(record);
  }
  Status SetPosition(std::string_view source, std::string_view position) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSetPosition));
    return target_->SetPosition(source, position);
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kGetPosition));
    return target_->GetPosition(source);
  }
  Result<OutboxAppend> AppendOutbox(const OutboxRow& row) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kAppendOutbox));
    return target_->AppendOutbox(row);
  }
  Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kPendingOutbox));
    return target_->PendingOutbox(after_seq, rows_max);
  }
  Status MarkOutboxSent(int64_t seq, std::string_view stream,
                        std::optional<int64_t> stream_sequence, int64_t at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kMarkOutboxSent));
    return target_->MarkOutboxSent(seq, stream, stream_sequence, at_ms);
  }
  Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRecordOutboxAttempt));
    return target_->RecordOutboxAttempt(seq, error, at_ms);
  }
  Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kParkOutbox));
    return target_->ParkOutbox(seq, reason, at_ms);
  }
  Status UnparkOutbox(int64_t seq) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kUnparkOutbox));
    return target_->UnparkOutbox(seq);
  }
  Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kDeleteSentOutbox));
    return target_->DeleteSentOutbox(sent_before_ms, rows_max);
  }
  Result<int64_t> RemoveRetained(const RetainedRows& rows, int64_t before_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRemoveRetained));
    return target_->RemoveRetained(rows, before_ms);
  }
  Status RecordRetention(const RetentionRun& run) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRecordRetention));
    return target_->RecordRetention(run);
  }
  Result<ForgottenDigests> ForgetLedgerDigests(int64_t before_ms, std::string_view after,
                                               int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kForgetLedgerDigests));
    return target_->ForgetLedgerDigests(before_ms, after, rows_max);
  }
  Result<int64_t> PushSet(SetKind kind, const StoredContracts& set) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kPushSet));
    return target_->PushSet(kind, set);
  }
  Result<int64_t> LatestSetVersion(SetKind kind) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLatestSetVersion));
    return target_->LatestSetVersion(kind);
  }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSetAt));
    return target_->SetAt(kind, version);
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSetHistory));
    return target_->SetHistory(kind, rows_max);
  }
  Result<Rows<OutboxRow>> ClaimOutbox(int64_t rows_max, int64_t partitions_max, int64_t hold_ms,
                                      int64_t now_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kClaimOutbox));
    return target_->ClaimOutbox(rows_max, partitions_max, hold_ms, now_ms);
  }
  Result<Insert> InsertIntent(const EffectIntent& intent) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kInsertIntent));
    return target_->InsertIntent(intent);
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindIntent));
    return target_->FindIntent(key);
  }
  Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kDueIntents));
    return target_->DueIntents(now_ms, rows_max);
  }
  Status UpdateIntent(const EffectIntent& intent, int64_t expected_revision) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kUpdateIntent));
    return target_->UpdateIntent(intent, expected_revision);
  }
  Status LogIntent(const EffectLogEntry& entry) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLogIntent));
    return target_->LogIntent(entry);
  }
  Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                     std::string_view subject,
                                                     std::string_view effect) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLatestIntentOf));
    return target_->LatestIntentOf(consumer, subject, effect);
  }
  Result<Insert> InsertCompensation(const CompensationRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kInsertCompensation));
    return target_->InsertCompensation(record);
  }
  Status UpdateCompensation(const CompensationRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kUpdateCompensation));
    return target_->UpdateCompensation(record);
  }
  Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCompensationsOfIntent));
    return target_->CompensationsOfIntent(key);
  }
  Status InsertCorrection(const ProjectionCorrection& correction) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kInsertCorrection));
    return target_->InsertCorrection(correction);
  }
  Result<std::vector<GroupMember>> JoinGroup(std::string_view group, std::string_view member,
                                             int64_t partition_count, int64_t now_ms,
                                             int64_t expires_at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kJoinGroup));
    return target_->JoinGroup(group, member, partition_count, now_ms, expires_at_ms);
  }
  Status LeaveGroup(std::string_view group, std::string_view member) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLeaveGroup));
    return target_->LeaveGroup(group, member);
  }
  Result<std::optional<GroupLease>> AcquireLease(std::string_view group, int64_t partition,
                                                 std::string_view holder, int64_t now_ms,
                                                 int64_t expires_at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kAcquireLease));
    return target_->AcquireLease(group, partition, holder, now_ms, expires_at_ms);
  }
  Result<bool> RenewLease(std::string_view group, int64_t partition, std::string_view holder,
                          int64_t epoch, int64_t expires_at_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRenewLease));
    return target_->RenewLease(group, partition, holder, epoch, expires_at_ms);
  }
  Status ReleaseLease(std::string_view group, int64_t partition, std::string_view holder,
                      int64_t epoch) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kReleaseLease));
    return target_->ReleaseLease(group, partition, holder, epoch);
  }
  Status FenceLease(std::string_view group, int64_t partition, std::string_view holder,
                    int64_t epoch, std::optional<int64_t> position, std::optional<int64_t> lag,
                    int64_t hold_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFenceLease));
    return target_->FenceLease(group, partition, holder, epoch, position, lag, hold_ms);
  }
  Result<GroupLease> SeizeLease(std::string_view group, int64_t partition, std::string_view holder,
                                int64_t now_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSeizeLease));
    return target_->SeizeLease(group, partition, holder, now_ms);
  }
  Status IntendOnce(const EffectIntent& intent, std::string_view trigger_detail) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kIntendOnce));
    return target_->IntendOnce(intent, trigger_detail);
  }
  Status RecordCompensation(const CompensationRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRecordCompensation));
    return target_->RecordCompensation(record);
  }
  Status RecordGap(const GapRecord& record) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRecordGap));
    return target_->RecordGap(record);
  }

 protected:
  // Asked before each forwarded call (Rollback aside: a rollback always reaches the target); an
  // error is returned in the call's place and the call never reaches the target. Default: OK.
  virtual Status Enter(StoreCall call) {
    (void)call;
    return Status::Ok();
  }

  std::unique_ptr<Transaction> target_;
};

class SnapshotWrapper : public Snapshot {
 public:
  explicit SnapshotWrapper(std::unique_ptr<Snapshot> target) : target_(std::move(target)) {}

  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindProjection));
    return target_->FindProjection(consumer, subject);
  }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindLedger));
    return target_->FindLedger(consumer, source, event_id);
  }
  Result<Rows<Projection>> ProjectionsOf(std::string_view subject, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kProjectionsOf));
    return target_->ProjectionsOf(subject, rows_max);
  }
  Result<Rows<LedgerEntry>> LedgerOf(std::string_view consumer, std::string_view subject,
                                     int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLedgerOf));
    return target_->LedgerOf(consumer, subject, rows_max);
  }
  Result<Rows<DeferredEvent>> DeferredOf(std::string_view consumer, std::string_view subject,
                                         int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kDeferredOf));
    return target_->DeferredOf(consumer, subject, rows_max);
  }
  Result<Rows<DeferredEvent>> AllDeferred(int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kAllDeferred));
    return target_->AllDeferred(rows_max);
  }
  Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kQuarantineOf));
    return target_->QuarantineOf(subject, rows_max);
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindQuarantine));
    return target_->FindQuarantine(id);
  }
  Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                QuarantineCursor after, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kListQuarantine));
    return target_->ListQuarantine(filter, after, rows_max);
  }
  Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kAuditOf));
    return target_->AuditOf(record_id, rows_max);
  }
  Result<Rows<GapRecord>> GapRecordsOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kGapRecordsOf));
    return target_->GapRecordsOf(consumer, subject, rows_max);
  }
  Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kOpenGapRecords));
    return target_->OpenGapRecords(rows_max);
  }
  Result<Rows<JournalEntry>> JournalOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kJournalOf));
    return target_->JournalOf(consumer, subject, rows_max);
  }
  Result<Rows<EvidenceRecord>> EvidenceOf(std::string_view consumer, std::string_view subject,
                                          int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kEvidenceOf));
    return target_->EvidenceOf(consumer, subject, rows_max);
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kGetPosition));
    return target_->GetPosition(source);
  }
  Result<std::vector<std::pair<std::string, int64_t>>> Counts() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCounts));
    return target_->Counts();
  }
  Result<RetainedRows> Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                  int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRetainable));
    return target_->Retainable(kind, before_ms, after, rows_max);
  }
  Result<int64_t> CountRetainable(RetainedKind kind, int64_t before_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCountRetainable));
    return target_->CountRetainable(kind, before_ms);
  }
  Result<RetainedRows> RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                        int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRetainableLedger));
    return target_->RetainableLedger(before_ms, after, rows_max);
  }
  Result<int64_t> CountLedgerDigests(int64_t before_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCountLedgerDigests));
    return target_->CountLedgerDigests(before_ms);
  }
  Result<std::optional<RetentionRun>> LatestRetention() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLatestRetention));
    return target_->LatestRetention();
  }
  Result<int64_t> LatestSetVersion(SetKind kind) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kLatestSetVersion));
    return target_->LatestSetVersion(kind);
  }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSetAt));
    return target_->SetAt(kind, version);
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSetHistory));
    return target_->SetHistory(kind, rows_max);
  }
  Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                     int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kOutboxRows));
    return target_->OutboxRows(select, after_seq, rows_max);
  }
  Result<OutboxStats> OutboxStatsNow(int64_t now_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kOutboxStatsNow));
    return target_->OutboxStatsNow(now_ms);
  }
  Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                              std::string_view event_id) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindOutbox));
    return target_->FindOutbox(source, event_id);
  }
  Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                          int64_t from_version, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kOutboxOfSubject));
    return target_->OutboxOfSubject(source, subject, from_version, rows_max);
  }
  Result<Rows<ProjectionCorrection>> CorrectionsOf(std::string_view consumer,
                                                   std::string_view subject,
                                                   int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCorrectionsOf));
    return target_->CorrectionsOf(consumer, subject, rows_max);
  }
  Result<std::vector<GroupLease>> GroupLeases(std::string_view group) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kGroupLeases));
    return target_->GroupLeases(group);
  }
  Result<std::vector<GroupMember>> GroupMembers(std::string_view group) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kGroupMembers));
    return target_->GroupMembers(group);
  }
  Result<int64_t> GroupPartitionCount(std::string_view group) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kGroupPartitionCount));
    return target_->GroupPartitionCount(group);
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kFindIntent));
    return target_->FindIntent(key);
  }
  Result<Rows<EffectIntent>> ListIntents(const EffectFilter& filter, int64_t after_seq,
                                         int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kListIntents));
    return target_->ListIntents(filter, after_seq, rows_max);
  }
  Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key, int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kIntentLogOf));
    return target_->IntentLogOf(key, rows_max);
  }
  Result<Rows<CompensationRecord>> ListCompensations(std::string_view consumer,
                                                     std::string_view subject, int64_t after_seq,
                                                     int64_t rows_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kListCompensations));
    return target_->ListCompensations(consumer, subject, after_seq, rows_max);
  }

 protected:
  // Asked before each forwarded call (Rollback aside: a rollback always reaches the target); an
  // error is returned in the call's place and the call never reaches the target. Default: OK.
  virtual Status Enter(StoreCall call) {
    (void)call;
    return Status::Ok();
  }

  std::unique_ptr<Snapshot> target_;
};

class StoreWrapper : public Store {
 public:
  explicit StoreWrapper(std::unique_ptr<Store> target) : target_(std::move(target)) {}

  Result<std::unique_ptr<Transaction>> Begin() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kBegin));
    return target_->Begin();
  }
  Result<std::unique_ptr<Snapshot>> Read() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kRead));
    return target_->Read();
  }
  bool BatchLoadPays() const override { return target_->BatchLoadPays(); }
  bool RelaysShare() const override { return target_->RelaysShare(); }
  Result<bool> WaitForOutbox(int64_t timeout_ms) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kWaitForOutbox));
    return target_->WaitForOutbox(timeout_ms);
  }
  Result<Space> SpaceNow() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kSpaceNow));
    return target_->SpaceNow();
  }
  Result<int64_t> ReturnSpace(int64_t pages_max) override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kReturnSpace));
    return target_->ReturnSpace(pages_max);
  }
  Status Compact() override {
    EVIDENT_RETURN_IF_ERROR(Enter(StoreCall::kCompact));
    return target_->Compact();
  }

 protected:
  // As TransactionWrapper::Enter, for Begin, Read, WaitForOutbox and the space calls.
  virtual Status Enter(StoreCall call) {
    (void)call;
    return Status::Ok();
  }

  std::unique_ptr<Store> target_;
};

}  // namespace evident
