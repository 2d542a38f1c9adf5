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
// Never removed: ledger rows, projections, deferred events, open gaps, open quarantine records,
// intended or unknown effects, effect intents themselves (their keys keep an effect from being
// intended twice), compensations, pending or parked outbox rows.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/env.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// "journal", "quarantine", "gap", "effect-log", "outbox"
std::string_view RetainedKindName(RetainedKind kind);
inline constexpr size_t kRetainedKindCount = std::size(kRetainedKinds);

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
  Clock* clock = nullptr;               // null: the real clock
  const CancelToken* cancel = nullptr;  // checked between transactions
};

struct RetainSummary {
  int64_t horizon_ms = 0;
  bool dry_run = false;
  std::array<int64_t, kRetainedKindCount> removed{};  // by RetainedKind (dry run: would be)
  int64_t archived = 0;                               // lines written to the archive
  int64_t transactions = 0;
  bool cancelled = false;  // stopped between transactions; what was removed stays removed
  int64_t total() const;
};

// Runs retention over `store`; `archive` may be null (nothing archived). A run that removes
// anything records itself in the store (RetentionRun) for evidence.
Result<RetainSummary> Retain(Store& store, const RetainOptions& options, RetentionArchive* archive);

}  // namespace evident
