// store/postgres/pg_transaction.h — the PostgreSQL store's Transaction and Snapshot over one
// pipelined connection (pg_connection.h), and the session they share with their Store.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "evident/store.h"
#include "store/postgres/pg_connection.h"

namespace evident::postgres {

// The connection of one Store, shared with its open Transaction or Snapshot (which may outlive
// the Store).
struct Session {
  enum class Open : uint8_t { kNone, kWrite, kRead };
  std::unique_ptr<Connection> connection;
  Open open = Open::kNone;
  bool read_only = false;
  bool deciders_shared = false;  // consumers' locks taken shared (StoreOptions::deciders)
  // Consumers' locks taken shared, and each (consumer, subject) decided locked exclusively
  // (WillDecideSubject): deciders inside application transactions (evident_decide).
  bool deciders_by_subject = false;
  // The highest partition the last ClaimOutbox returned rows of: the next claim starts above
  // it, so that one relay goes round the partitions instead of always taking the lowest.
  int64_t last_claimed_partition = -1;
  // Multi-row INSERTs of buffered ledger and projection rows sent so far (PostgresBufferedInserts:
  // a batch sends one or two, unless something flushes the buffers mid-batch).
  int64_t buffered_inserts = 0;
};

// One write transaction. Rows the transaction knows for certain (from Load, its own reads and
// its own writes, which either all commit or fail the transaction) are kept, so that the batch
// reads them without a round trip and sends its writes of them without waiting.
class PgTransaction final : public Transaction {
 public:
  explicit PgTransaction(std::shared_ptr<Session> session);
  ~PgTransaction() override;

  Status Commit() override;
  Status Rollback() override;
  // The connection, for the caller's own statements in this transaction (PostgresConnection).
  Result<PGconn*> Lend() {
    locked_intents_.clear();  // the caller's own statements may change what this knew of them
    return Db().Lend();
  }
  Status WillDecide(const std::vector<std::string>& consumers) override;
  Status WillDecideSubject(std::string_view consumer, std::string_view what) override;
  Result<BatchRows> Load(const BatchKeys& keys) override;

  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override;
  Result<Insert> InsertLedger(const LedgerEntry& entry) override;
  Status DeleteLedger(std::string_view consumer, std::string_view source,
                      std::string_view event_id) override;
  Result<std::optional<LedgerEntry>> AppliedAfter(std::string_view consumer,
                                                  std::string_view subject,
                                                  int64_t after_projection_version,
                                                  const std::vector<std::string>& types) override;
  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) override;
  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) override;
  Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                              Projection& out) override;
  Status PutProjection(const Projection& projection,
                       std::optional<int64_t> expected_version) override;
  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) override;
  Result<Insert> InsertDeferred(const DeferredEvent& event) override;
  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) override;
  Result<QuarantineKept> Quarantine(const QuarantineRecord& record) override;
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override;
  Result<std::optional<GapRecord>> FindGap(std::string_view consumer, std::string_view subject,
                                           int64_t expected_version) override;
  Result<Insert> InsertGap(const GapRecord& record) override;
  Result<bool> ReadProjectionLocked(std::string_view consumer, std::string_view subject,
                                    Projection& out) override;
  Status RecordGap(const GapRecord& record) override;
  Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                            int64_t through_version, const GapClosing& closing) override;
  Status UpdateGap(const GapRecord& record) override;
  Status SetQuarantineStatus(int64_t id, QuarantineStatus status) override;
  Status AuditQuarantine(const QuarantineAudit& entry) override;
  Status Journal(const JournalEntry& entry) override;
  Status PutEvidence(const EvidenceRecord& record) override;
  Status SetPosition(std::string_view source, std::string_view position) override;
  Result<std::optional<std::string>> GetPosition(std::string_view source) override;
  Result<OutboxAppend> AppendOutbox(const OutboxRow& row) override;
  Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) override;
  Status MarkOutboxSent(int64_t seq, std::string_view stream,
                        std::optional<int64_t> stream_sequence, int64_t at_ms) override;
  Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) override;
  Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) override {
    return SetOutboxParked(seq, true, reason, at_ms);
  }
  Status UnparkOutbox(int64_t seq) override { return SetOutboxParked(seq, false, "", 0); }
  Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) override;
  Result<int64_t> RemoveRetained(const RetainedRows& rows, int64_t before_ms) override;
  Status RecordRetention(const RetentionRun& run) override;
  Result<ForgottenDigests> ForgetLedgerDigests(int64_t before_ms, std::string_view after,
                                               int64_t rows_max) override;
  Result<int64_t> PushSet(SetKind kind, const StoredContracts& set) override;
  Result<int64_t> LatestSetVersion(SetKind kind) override;
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override;
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override;
  Result<Rows<OutboxRow>> ClaimOutbox(int64_t rows_max, int64_t partitions_max, int64_t hold_ms,
                                      int64_t now_ms) override;
  Result<Insert> InsertIntent(const EffectIntent& intent) override;
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override;
  Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) override;
  Status UpdateIntent(const EffectIntent& intent, int64_t expected_revision) override;
  Status LogIntent(const EffectLogEntry& entry) override;
  Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                     std::string_view subject,
                                                     std::string_view effect) override;
  Result<Insert> InsertCompensation(const CompensationRecord& record) override;
  Status UpdateCompensation(const CompensationRecord& record) override;
  Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) override;
  Status InsertCorrection(const ProjectionCorrection& correction) override;
  Status IntendOnce(const EffectIntent& intent, std::string_view trigger_detail) override;
  Status RecordCompensation(const CompensationRecord& record) override;
  Result<std::vector<GroupMember>> JoinGroup(std::string_view group, std::string_view member,
                                             int64_t partition_count, int64_t now_ms,
                                             int64_t expires_at_ms) override;
  Status LeaveGroup(std::string_view group, std::string_view member) override;
  Result<std::optional<GroupLease>> AcquireLease(std::string_view group, int64_t partition,
                                                 std::string_view holder, int64_t now_ms,
                                                 int64_t expires_at_ms) override;
  Result<bool> RenewLease(std::string_view group, int64_t partition, std::string_view holder,
                          int64_t epoch, int64_t expires_at_ms) override;
  Status ReleaseLease(std::string_view group, int64_t partition, std::string_view holder,
                      int64_t epoch) override;
  Status FenceLease(std::string_view group, int64_t partition, std::string_view holder,
                    int64_t epoch, std::optional<int64_t> position, std::optional<int64_t> lag,
                    int64_t hold_ms) override;
  Result<GroupLease> SeizeLease(std::string_view group, int64_t partition, std::string_view holder,
                                int64_t now_ms) override;

 private:
  // The connection, after sending the rows buffered so far (FlushWrites): every statement then
  // runs after the writes issued before it, as issued.
  Connection& Db();
  Connection& Conn();  // without flushing, for the buffered writes themselves
  // Sends the buffered ledger inserts and projection puts as one multi-row statement per table
  // and kind (a batch's rows in a few statements, not one each).
  void FlushWrites();
  void FlushProjections();
  LedgerEntry* BufferedLedger(const std::string& key);  // the row in ledger_inserts_, if there
  Status End(const std::string& sql);
  // Takes the lock of each of `consumers` this transaction does not hold yet (StoreOptions::
  // deciders), sent ahead of the statements that read their rows.
  void LockConsumers(std::vector<std::string_view> consumers, bool exclusive = false);
  // The same held exclusively, whatever the session's deciders do: retention compacts receipts
  // while no decider of their consumers is in flight.
  void LockConsumersExclusively(std::vector<std::string_view> consumers) {
    LockConsumers(std::move(consumers), true);
  }
  void LockSubjects(const std::vector<SubjectKey>& subjects);
  void LockConsumer(std::string_view consumer);
  Status SetOutboxParked(int64_t seq, bool park, std::string_view reason, int64_t at_ms);
  Status KeepRetainedKeys(const std::vector<LedgerKey>& keys,
                          const std::vector<std::string>& digests, const Rowset& found);
  Result<int64_t> RemoveRetainedLedger(const std::vector<LedgerEntry>& rows, int64_t before_ms);
  Result<int64_t> RemoveRetainedIntents(const std::vector<EffectIntent>& rows, int64_t before_ms);
  // Sends the check that `intent`, just inserted, is not also a key retention kept as a digest
  // meanwhile (another consumer's intent of that key removed while the insert waited for it).
  void SendKeyRetainedMeanwhile(const EffectIntent& intent, std::string_view digest);
  static void Notify(Connection& db);

  std::shared_ptr<Session> session_;                     // null once finished
  std::set<std::string, std::less<>> locked_consumers_;  // LockConsumers
  std::set<std::string, std::less<>> locked_subjects_;   // WillDecideSubject
  // What this transaction knows: a row, or that there is none (nullopt). Keys join their parts
  // with NUL, which PostgreSQL text cannot hold.
  std::unordered_map<std::string, std::optional<LedgerEntry>> ledger_;
  std::unordered_map<std::string, std::optional<Projection>> projections_;
  std::unordered_map<std::string, std::optional<DeferredEvent>> deferred_;
  std::unordered_set<std::string> deferred_subjects_;  // every deferred event of these is known
  std::map<std::string, EvidenceRecord> evidence_;     // written at commit
  // Writes buffered until the next statement that needs them sent: ledger rows known to be
  // absent (a later change to one of them changes the buffered row), and projection puts (per
  // key: the version the first put expected, the last value). Statements that touch neither
  // (deferred rows, journal, ledger rows already sent) go out without flushing them.
  std::vector<LedgerEntry> ledger_inserts_;
  std::unordered_map<std::string, size_t> ledger_buffered_;  // key -> index in ledger_inserts_
  struct ProjectionPut {
    std::optional<int64_t> expected;
    Projection value;
  };
  std::map<std::string, ProjectionPut> projection_puts_;
  bool outbox_appended_ = false;  // a row appended: relays are told after the commit (NOTIFY)
  // The missing_to of every open gap record of a loaded (consumer, subject); forgotten for a
  // subject whose record UpdateGap changed (its CloseGaps then asks the server).
  std::unordered_map<std::string, std::vector<int64_t>> open_gaps_;
  // The intents this transaction holds locked (LatestIntentOf reads FOR UPDATE) and the revision
  // each is at: no other writer can change or remove them before the transaction ends, so their
  // update and its log entry go out without waiting (each checked on the server all the same).
  std::unordered_map<std::string, int64_t> locked_intents_;
};

class PgSnapshot final : public Snapshot {
 public:
  explicit PgSnapshot(std::shared_ptr<Session> session);
  ~PgSnapshot() override;

  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) override;
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override;
  Result<Rows<Projection>> ProjectionsOf(std::string_view subject, int64_t rows_max) override;
  Result<Rows<LedgerEntry>> LedgerOf(std::string_view consumer, std::string_view subject,
                                     int64_t rows_max) override;
  Result<Rows<DeferredEvent>> DeferredOf(std::string_view consumer, std::string_view subject,
                                         int64_t rows_max) override;
  Result<Rows<DeferredEvent>> AllDeferred(int64_t rows_max) override;
  Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject, int64_t rows_max) override;
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override;
  Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                QuarantineCursor after, int64_t rows_max) override;
  Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id, int64_t rows_max) override;
  Result<Rows<GapRecord>> GapRecordsOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override;
  Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max) override;
  Result<Rows<JournalEntry>> JournalOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override;
  Result<Rows<EvidenceRecord>> EvidenceOf(std::string_view consumer, std::string_view subject,
                                          int64_t rows_max) override;
  Result<std::optional<std::string>> GetPosition(std::string_view source) override;
  Result<std::vector<std::pair<std::string, int64_t>>> Counts() override;
  Result<RetainedRows> Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                  int64_t rows_max) override;
  Result<int64_t> CountRetainable(RetainedKind kind, int64_t before_ms) override;
  Result<RetainedRows> RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                        int64_t rows_max) override;
  Result<int64_t> CountLedgerDigests(int64_t before_ms) override;
  Result<std::optional<RetentionRun>> LatestRetention() override;
  Result<int64_t> LatestSetVersion(SetKind kind) override;
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override;
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override;
  Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                     int64_t rows_max) override;
  Result<OutboxStats> OutboxStatsNow(int64_t now_ms) override;
  Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                              std::string_view event_id) override;
  Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                          int64_t from_version, int64_t rows_max) override;
  Result<Rows<ProjectionCorrection>> CorrectionsOf(std::string_view consumer,
                                                   std::string_view subject,
                                                   int64_t rows_max) override;
  Result<std::vector<GroupLease>> GroupLeases(std::string_view group) override;
  Result<std::vector<GroupMember>> GroupMembers(std::string_view group) override;
  Result<int64_t> GroupPartitionCount(std::string_view group) override;
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override;
  Result<Rows<EffectIntent>> ListIntents(const EffectFilter& filter, int64_t after_seq,
                                         int64_t rows_max) override;
  Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key, int64_t rows_max) override;
  Result<Rows<CompensationRecord>> ListCompensations(std::string_view consumer,
                                                     std::string_view subject, int64_t after_seq,
                                                     int64_t rows_max) override;

 private:
  Connection& Db() { return *session_->connection; }
  std::shared_ptr<Session> session_;
};

// Reads both a Transaction and a Snapshot make, on either.
// The receipt of a key, or (its receipt compacted by retention) a `retained` entry for it when
// its digest is kept.
Result<std::optional<LedgerEntry>> QueryLedger(Connection& db, std::string_view consumer,
                                               std::string_view source, std::string_view event_id);
Result<std::optional<QuarantineRecord>> QueryQuarantine(Connection& db, int64_t id);
Result<std::optional<EffectIntent>> QueryIntent(Connection& db, std::string_view key);
Result<std::optional<std::string>> QueryPosition(Connection& db, std::string_view source);

}  // namespace evident::postgres
