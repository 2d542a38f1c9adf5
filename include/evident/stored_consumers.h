// evident/stored_consumers.h — consumers kept in the store, and the consumer's decision inside
// the caller's own transaction.
//
// `evident consumers push --config F` keeps a configuration's consumers with everything they
// are decided with (the configuration file, its contracts directory, its profile file) as the
// store's next numbered consumer set (store_contracts.h, SetKind::kConsumers). From then on the
// store is the one source of truth: `evident_decide` (SQL, in PostgreSQL and in the SQLite
// extension) and Decider below decide with the latest set their transaction sees, and `consume`
// and `serve` refuse a configuration whose consumer differs from the stored one
// (CheckConfigAgainstStore).
//
// Decider::Decide runs the whole pipeline (envelope, boundary, contract, payload, ledger,
// per-subject order with deferral and drain, quarantine, journal, evidence, intents) for one
// consumer inside the caller's transaction, and answers the events the caller must apply now,
// in order: the input's own decision first, then each deferred event the input made applicable.
//
// Thread-safety: the functions are reentrant; a Decider is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/status.h"
#include "evident/store.h"
#include "evident/stored_contracts.h"

namespace evident {

struct ConsumersPushOptions {
  // Bounds of the contracts directory kept with the configuration (ContractsPushOptions').
  int64_t files_max = 10'000;
  int64_t bytes_max = int64_t{64} << 20;
};

struct ConsumersPush {
  PushOutcome outcome = PushOutcome::kRefused;
  int64_t version = 0;  // the set pushed, or the latest when unchanged; 0 when refused
  std::string digest;   // of the set's files
  std::vector<std::string> consumers;  // the ids the set holds, in the configuration's order
  // Why it was refused: every problem of `evident config check` (its codes), and
  // TOO_MANY_FILES, SYMLINK or FILE_NOT_UTF8 from the contracts directory.
  std::vector<ConfigProblem> problems;
};

// Checks the configuration at `config_path` as `evident config check` does and, when it has no
// problem, keeps it with its contracts directory and profile file as the store's next consumer
// set. Pushing what the latest set holds already is `unchanged`. An error is a failure to read
// or to write; kAborted when another push committed meanwhile (push again).
Result<ConsumersPush> PushConsumersConfig(Store& store, const std::string& config_path,
                                          const ConsumersPushOptions& options, int64_t now_ms);

// The pipeline of a stored consumer set, built as `consume` builds one from the files the set
// holds.
Result<std::unique_ptr<Pipeline>> PipelineOf(const StoredContracts& set);

// The pipeline of the latest consumer set `reads` sees (a Snapshot or a Transaction); kNotFound
// when the store holds none. What `guard` decides with when no configuration is given.
Result<std::unique_ptr<Pipeline>> LatestStoredPipeline(ContractReads& reads);

// Each consumer's digest in a configuration: of its entry in the file, its contract, the schema
// files of what it accepts, the adapters and the envelope profile. Two configurations decide a
// consumer alike when its digests are equal.
Result<std::map<std::string, std::string>> ConsumerDigests(const std::string& config_path);

// Refuses (kFailedPrecondition) a configuration read from `config_path` whose consumer the
// store's latest consumer set holds in another version, naming both; Ok when the store holds no
// consumer set or every shared consumer is the same.
Status CheckConfigAgainstStore(Store& store, const std::string& config_path);

// One event the caller must apply now.
struct DecidedEvent {
  Decision decision;  // outcome, reason, key, subject, subject_version, drained, adapter
  // The event as the consumer reads it: the input's bytes, or a drained event's; its payload
  // replaced by what the adapters wrote when it was read through adapters.
  std::string event;
  std::optional<int64_t> schema_version;  // of that payload; nullopt when none was read
};

// Decides for the consumers of the latest consumer set a transaction sees; the pipeline of a
// set is built once and kept until a newer set is pushed.
class Decider {
 public:
  // Decides `event` for `consumer` inside `tx` (the caller's transaction: nothing is committed
  // here). kNotFound when the store holds no consumer set or the set no such consumer;
  // kFailedPrecondition when the set cannot be built. The outcomes (duplicate, deferred,
  // payload-invalid, ...) are values in the answer, never errors.
  Result<std::vector<DecidedEvent>> Decide(Transaction& tx, std::string_view consumer,
                                           std::string_view event, int64_t now_ms);
  int64_t version() const { return version_; }  // of the set in hand; 0 before the first Decide

 private:
  Result<Pipeline*> For(Transaction& tx);
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<PreparedEvent> slot_;
  int64_t version_ = 0;
  std::string digest_;
};

}  // namespace evident
