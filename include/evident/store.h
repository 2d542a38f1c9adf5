// evident/store.h — the consumer store: ledger with receipts, projections, deferred events,
// kept inputs, journal, evidence and input checkpoints, behind one narrow interface.
//
// The consumer pipeline runs every write of a batch inside one transaction (Begin ... Commit):
// receipts + ledger + projection + deferred + kept + journal + checkpoint commit together or not
// at all. Backends: SQLite (embedded default, src/store/sqlite). A conformance suite runs against
// every backend.
//
// Thread-safety: a Store is used by one thread at a time.
// Times are milliseconds since the Unix epoch (UTC).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident {

// A ledger row: the consumer saw this input and decided. `state` is "applied" (a receipt) or
// "deferred" (waiting for a gap to close; it becomes "applied" when drained).
struct LedgerEntry {
  std::string consumer, source, event_id;
  std::string state;  // "applied" | "deferred"
  std::string type;
  std::string subject;  // empty when the event names none
  std::optional<int64_t> subject_version;
  int64_t input_schema_version = 0;
  int64_t result_version = 0;
  std::optional<int64_t> projection_version;  // after apply
  int64_t committed_at_ms = 0;
  int64_t duplicates = 0;
  std::optional<int64_t> last_duplicate_at_ms;
};

struct Projection {
  std::string consumer, subject;
  int64_t version = 0;
  std::string state;
  std::string fields_json = "{}";  // copied payload fields, a JSON object
  std::string owner_source;
  int64_t owner_version_seen = 0;
  int64_t updated_at_ms = 0;
};

struct DeferredEvent {
  std::string consumer, subject;
  int64_t subject_version = 0;
  std::string source, event_id, type;
  int64_t schema_version = 0;
  int64_t expected_version = 0;
  std::string raw;  // original bytes
  int64_t received_at_ms = 0;
  int64_t deadline_at_ms = 0;
  std::string route;        // wait | request-replay | manual
  int64_t input_index = 0;  // where the event stood in its input
};

// An input that was not applied, kept with its reason and original bytes.
struct KeptInput {
  int64_t seq = 0;       // assigned by the store
  std::string consumer;  // empty when rejected before any consumer was chosen
  std::string outcome;   // rejected, contract-update-required, payload-invalid, stale, ...
  std::string reason;    // stable code
  std::string message;
  std::string source, event_id, type, subject;
  std::optional<int64_t> subject_version;
  std::string raw;
  int64_t received_at_ms = 0;
  int64_t input_index = 0;
};

// One delivery decision that has no ledger row of its own (an applied delivery's ledger row is
// its journal entry).
struct JournalEntry {
  int64_t seq = 0;
  std::string consumer, outcome, source, event_id, subject;
  std::optional<int64_t> subject_version;
  int64_t at_ms = 0;
};

struct EvidenceRecord {
  std::string consumer, subject, name, source, event_id;
  std::optional<int64_t> subject_version;
  int64_t recorded_at_ms = 0;
};

// How far a run got through one input, and what that input was: the lines decided and
// committed, and the size and a hash of exactly those bytes (lines ending in a newline; a last
// line without one counts as if it had it). A resumed run skips `lines` only when the input
// starts with the same `bytes` bytes of the same hash.
struct InputCheckpoint {
  int64_t lines = 0;
  int64_t bytes = 0;
  uint64_t prefix_hash = 0;  // 64-bit FNV-1a of those bytes
  // False for a checkpoint written before inputs were identified (only `lines` is known).
  bool identified = true;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  virtual Status Rollback() = 0;

  // --- the write path, inside a transaction ---
  virtual Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer,
                                                        std::string_view source,
                                                        std::string_view event_id) = 0;
  virtual Status InsertLedger(const LedgerEntry& entry) = 0;
  // Marks a deferred ledger row applied, with its receipt fields.
  virtual Status MarkApplied(std::string_view consumer, std::string_view source,
                             std::string_view event_id, int64_t projection_version,
                             int64_t committed_at_ms) = 0;
  virtual Status CountDuplicate(std::string_view consumer, std::string_view source,
                                std::string_view event_id, int64_t at_ms) = 0;

  virtual Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                           std::string_view subject) = 0;
  virtual Status PutProjection(const Projection& projection) = 0;
  // The write path's projection of (consumer, subject), inside a transaction: the store's own
  // copy, for the caller to change in place and hand back to PutProjection (neither step copies
  // it). A subject with no projection yet gets a new one (version 0, `found` false), which is
  // not stored unless put. The pointer is valid until Commit or Rollback.
  struct ProjectionRef {
    Projection* projection;
    bool found;
  };
  virtual Result<ProjectionRef> EditProjection(std::string_view consumer,
                                               std::string_view subject) = 0;

  virtual Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                            std::string_view subject,
                                                            int64_t subject_version) = 0;
  // One event per (consumer, subject, version) waits; the caller looks first (FindDeferred).
  // A backend may hold the row until Commit, so a clash with a row from an earlier transaction
  // can surface at Commit rather than here.
  virtual Status InsertDeferred(const DeferredEvent& event) = 0;
  virtual Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                                int64_t subject_version) = 0;

  virtual Status Keep(const KeptInput& input) = 0;
  virtual Status Journal(const JournalEntry& entry) = 0;
  // Records named evidence for (consumer, subject); one record per name, the latest wins. The
  // evidence belongs to that subject's projection: it is durable once that projection is put in
  // the same transaction (the pipeline always does).
  virtual Status PutEvidence(const EvidenceRecord& record) = 0;

  // Input checkpoints, by input name: how far the run got (written in the batch's transaction).
  virtual Status SetCheckpoint(std::string_view input, const InputCheckpoint& checkpoint) = 0;
  virtual Result<std::optional<InputCheckpoint>> GetCheckpoint(std::string_view input) = 0;

  // --- the read path (evidence, gaps, guards) ---
  virtual Result<std::vector<Projection>> ProjectionsOf(std::string_view subject) = 0;
  virtual Result<std::vector<LedgerEntry>> LedgerOf(std::string_view consumer,
                                                    std::string_view subject) = 0;
  virtual Result<std::vector<DeferredEvent>> DeferredOf(std::string_view consumer,
                                                        std::string_view subject) = 0;
  virtual Result<std::vector<DeferredEvent>> AllDeferred() = 0;
  virtual Result<std::vector<KeptInput>> KeptOf(std::string_view subject) = 0;
  virtual Result<std::vector<JournalEntry>> JournalOf(std::string_view consumer,
                                                      std::string_view subject) = 0;
  virtual Result<std::vector<EvidenceRecord>> EvidenceOf(std::string_view consumer,
                                                         std::string_view subject) = 0;
  // Counts per table, for tests and summaries: ledger, projection, deferred, kept, journal.
  virtual Result<std::vector<std::pair<std::string, int64_t>>> Counts() = 0;
};

struct SqliteOptions {
  // PRAGMA synchronous: "FULL" (default: a commit survives power loss), "NORMAL" (survives a
  // process crash, not power loss), "OFF" (benchmarks only).
  std::string synchronous = "FULL";
  // Page cache, in KiB. Bounds the store's memory whatever the size of the database.
  int64_t cache_kib = 16 * 1024;
  // How long to wait for a lock held by another process, in milliseconds. A writer that finds
  // the store locked past this is refused (kUnavailable) with the holding process named.
  int64_t busy_timeout_ms = 5000;
  // Open an existing store for reading only: never create the file, never change it (no WAL
  // switch, no tables, no checkpoints). A missing file, or a file that is not an evident store,
  // is refused (kNotFound, kFailedPrecondition). For evidence, gaps and guards.
  bool read_only = false;
  // WAL checkpoints (copying the WAL into the database file, then that file's fsync), in pages
  // of the database (4 KiB unless the file says otherwise). After each commit that leaves at
  // least `checkpoint_wal_pages` in the WAL (SQLite's own automatic threshold; pages already
  // copied count until the WAL restarts), a checkpoint runs: on a thread and connection of
  // their own when the commit wrote at least `checkpoint_thread_commit_pages`, and the next
  // commit does not wait for it; otherwise on the committing connection, as SQLite does.
  // `checkpoint_thread` false: always on the committing connection.
  int64_t checkpoint_wal_pages = 1000;
  bool checkpoint_thread = true;
  int64_t checkpoint_thread_commit_pages = 64;
  // With the thread, a commit that leaves this many pages in the WAL waits for the thread's
  // checkpoint and checkpoints on its own connection, which lets the WAL restart from its
  // beginning (it cannot while commits keep coming). The WAL then holds at most this many pages
  // plus one commit's, unless a reader elsewhere holds an old snapshot (no checkpoint may copy
  // past it). The WAL file keeps its largest size until the store is closed.
  int64_t wal_pages_max = 16000;
};

// Opens (creating when absent) a SQLite store at `path` in WAL mode.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options = {});

// Process-wide SQLite settings for a program that owns its process (the evident CLI does):
// memory statistics off, which otherwise take a global mutex on every SQLite allocation. Call
// before any store is opened; false when SQLite was already initialized (nothing changes then).
// A library embedding evident in a larger program leaves this to that program.
bool ConfigureSqliteProcess();

// Opens a store from a URI: "sqlite:PATH" (with `sqlite` options).
Result<std::unique_ptr<Store>> OpenStore(std::string_view uri, const SqliteOptions& sqlite = {});

}  // namespace evident
