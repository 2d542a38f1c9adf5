// evident/retention.h — a store that does not grow forever: removes what is settled and older
// than a horizon (store_retention.h says what, per kind), in small transactions that never hold
// a lock long, archiving every record first when asked.
//
// Archive first: each batch's records are written to the archive and made durable (Sync) before
// the transaction that removes them commits, so a crash between the two leaves a record in the
// store (and perhaps twice in the archive), never in neither. Each archive line is one JSON
// object: {"retained":KIND,"horizon":T,"record":{...}}, the record in the shape the evidence
// packet or the command that lists it shows (docs/retention.md).
//
// Receipts (kLedger) are compacted, not forgotten: the digest of each key stays, so a redelivery
// is still a duplicate; only `forget_ledger_after_ms` drops digests.
//
// Effect intents (kIntent) likewise leave their keys' digests, so a key is never intended twice;
// the latest intent of each consumer, subject and effect stays whole.
//
// Never removed: projections, deferred events, open gaps, open quarantine records, intended or
// unknown effects, the latest intent of each (consumer, subject, effect), intents a compensation
// names, compensations, pending or parked outbox rows, deferred receipts.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/config.h"
#include "evident/env.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// Where archived records go: lines appended, then made durable before their removal commits.
class RetentionArchive {
 public:
  virtual ~RetentionArchive() = default;
  virtual Status Append(std::string_view lines) = 0;
  virtual Status Sync() = 0;
  // Releases it; every line was synced already, so only a failure to release remains to tell.
  virtual Status Close() = 0;
  // What the run's record names as the archive ("-" for standard output, else a path).
  virtual const std::string& name() const = 0;
};

// An archive appended to the file at `path` through `env` (created when absent).
Result<std::unique_ptr<RetentionArchive>> OpenRetentionArchive(Env& env, const std::string& path);

struct RetainOptions {
  // Records settled more than this long ago go (> 0).
  int64_t older_than_ms = 0;
  // Count what would go, remove nothing, write no archive.
  bool dry_run = false;
  // Records looked at per transaction (and per archive sync).
  int64_t batch_count_max = 500;
  // After each transaction, a pause of this percent of the time it took (at most a second), so
  // that a run beside the store's writers takes at most about 100 / (100 + yield_percent) of
  // the time; 0: back to back.
  int64_t yield_percent = 100;
  Clock* clock = nullptr;               // null: the real clock
  const CancelToken* cancel = nullptr;  // checked between transactions
  std::vector<RetainedKind> kinds;      // the kinds this run removes; empty: every kind
  // > 0: the digests of receipts committed more than this long ago are dropped too, after the
  // kinds (a redelivery of such an event is then decided afresh); 0: digests are kept for good.
  int64_t forget_ledger_after_ms = 0;
};

struct RetainSummary {
  int64_t horizon_ms = 0;
  bool dry_run = false;
  std::array<int64_t, kRetainedKindCount> removed{};  // by RetainedKind (dry run: would be)
  int64_t archived = 0;                               // lines written to the archive
  int64_t transactions = 0;
  // With forget_ledger_after_ms: its horizon and the digests dropped (dry run: would be).
  int64_t forget_horizon_ms = 0;
  int64_t digests_forgotten = 0;
  bool cancelled = false;  // stopped between transactions; what was removed stays removed
  int64_t total() const;
};

// Runs retention over `store`; `archive` may be null (nothing archived). A run that removes
// anything records itself in the store (RetentionRun) for evidence.
Result<RetainSummary> Retain(Store& store, const RetainOptions& options, RetentionArchive* archive);

// One run of the configuration's `retention:` (config.h RetentionConfig): a Retain per distinct
// horizon, over the kinds that have it (each recorded as a run of its own), into `archive`
// (may be null). Returns what each removed, in order of horizon, shortest first.
Result<std::vector<RetainSummary>> RetainAsConfigured(Store& store, const RetentionConfig& config,
                                                      RetentionArchive* archive, Clock* clock,
                                                      const CancelToken* cancel);

// The configuration's retention applied beside a long-running command (`consume`, `serve`,
// `relay`): on a thread and a Store of its own, a run at start and then every `every_ms`, each
// followed by giving freed space back (SQLite's incremental vacuum). A run that fails (the store
// down, the archive unwritable) is said on `log` and tried again at the next tick: retention
// never stops the command beside it, and nothing is removed before its archive line is durable.
struct RetentionTimerOptions {
  RetentionConfig config;
  std::function<Result<std::unique_ptr<Store>>()> open_store;  // a Store of the timer's own
  Env* env = nullptr;                                          // the archive's; null: the POSIX Env
  Clock* clock = nullptr;                                      // null: the real clock
  std::FILE* log = nullptr;  // a line per run that removed something or failed; null: none
  std::string command;       // names the command in log lines ("consume", "relay", ...)
  int64_t vacuum_pages_max = 1'000'000;  // free pages given back after each run
};

class RetentionTimer {
 public:
  struct Counts {
    int64_t runs = 0;      // runs ended, whatever their outcome
    int64_t failures = 0;  // runs that failed
    int64_t removed = 0;   // records removed by every run
  };

  // Starts the thread; config.every_ms > 0 and open_store set.
  explicit RetentionTimer(RetentionTimerOptions options);
  RetentionTimer(const RetentionTimer&) = delete;
  RetentionTimer& operator=(const RetentionTimer&) = delete;
  ~RetentionTimer();  // Stop()

  // Ends the thread: a run in progress stops between its transactions (what it removed stays
  // removed, each record archived first). Idempotent.
  void Stop();
  Counts counts() const;

 private:
  void Loop();
  Status RunOnce(std::unique_ptr<Store>& store);

  RetentionTimerOptions options_;
  CancelToken stop_;
  mutable std::mutex mutex_;
  Counts counts_;
  std::thread thread_;
};

}  // namespace evident
