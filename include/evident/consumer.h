// evident/consumer.h — the consumer pipeline: every input event, for every consumer that
// subscribes to its type, ends in exactly one outcome, decided in this order:
//
//   envelope (size, I-JSON, required attributes, specversion, types)      -> rejected
//   per consumer: source boundary, schema version present                 -> rejected
//   (type, schemaversion) accepted by the consumer contract               ->
//   contract-update-required payload valid under its schema version -> payload-invalid ledger
//   already holds consumerId:source:id                             -> duplicate ordering by
//   subject: below the projection version                     -> stale
//                        equal to an applied or deferred version          -> same-version-conflict
//                        beyond the next version                          -> deferred
//   the projection step                                                   -> applied
//   (and `unrouted` when no consumer subscribes to the type)
//
// Every decision is written to the store inside the caller's open transaction: receipts and
// ledger, projection, deferred events, kept inputs (original bytes and reason), journal. Nothing
// is dropped. Outcomes are values; a Status reports only a failing store.
//
// Thread-safety: a Pipeline is used by one thread at a time (it owns parsers).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/config.h"
#include "evident/env.h"
#include "evident/envelope.h"
#include "evident/evidence.h"  // EvaluateGuard and ExpectedVersion, which lived here
#include "evident/gaps.h"
#include "evident/outcome.h"
#include "evident/retry.h"
#include "evident/source.h"
#include "evident/status.h"
#include "evident/store.h"
#include "evident/tracing.h"

namespace evident {

// One (event, consumer) decision, as `evident consume --outcomes` prints it.
struct Decision {
  int64_t index = 0;     // the input line (NDJSON) or batch position of the event
  std::string consumer;  // empty (printed null) when rejected before a consumer was chosen
  Outcome outcome = Outcome::kRejected;
  std::string reason;   // stable code, empty (null) for applied / deferred / duplicate
  std::string message;  // for people
  std::string key;      // consumerId:source:id, empty when unknown
  std::string subject;
  std::optional<int64_t> subject_version;
  std::optional<int64_t> projection_version;  // after the decision
  std::optional<int64_t> expected_version;    // for deferred
  bool drained = false;                       // applied from the deferred set when a gap closed
  std::vector<std::string> errors;            // payload-invalid: "instanceLocation: error" lines
  std::string adapter;  // the version adapters the payload was read through, or empty
  // The event carried no schema version and was read as its contract's default_schema_version.
  bool schema_version_defaulted = false;
  // The event's W3C traceparent (the trace a decision batch's span links to); empty when none.
  // Not part of the outcome line: the receipt keeps it (LedgerEntry::traceparent).
  std::string traceparent;
  // Filled by Pipeline::DecideReading alone (stored_consumers.h' Decider), else empty: the event
  // as the consumer reads it (the input's bytes, or a drained event's, with the payload its
  // adapters wrote when it was read through adapters), and the schema version of that payload.
  std::string read_event;
  std::optional<int64_t> read_schema_version;
};

// Appends the decision as one JSON object (no newline).
void AppendDecisionJson(const Decision& decision, std::string& out);

// An input event prepared for Pipeline::Decide: its bytes, parse and store-free checks. Each
// holds its own parser, so events can be prepared on one thread while another decides earlier
// ones. Made by Pipeline::NewPreparedEvent and reused for event after event.
class PreparedEvent {
 public:
  ~PreparedEvent();
  PreparedEvent(const PreparedEvent&) = delete;
  PreparedEvent& operator=(const PreparedEvent&) = delete;
  size_t size() const;             // bytes held for the event
  std::string_view bytes() const;  // the event's bytes, as given to Prepare
  // The envelope's refusal of the prepared bytes; null when it accepted them.
  const Rejection* rejection() const;

 private:
  friend class Pipeline;
  struct Impl;
  explicit PreparedEvent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Pipeline {
 public:
  // Compiles every accepted payload schema and prepares the parsers. Fails on a schema that
  // does not compile.
  static Result<std::unique_ptr<Pipeline>> Create(const Config& config);
  ~Pipeline();

  // Decides one input event for every subscribed consumer; appends one Decision per consumer
  // (plus one per drained successor). Writes go to `store`, whose transaction the caller owns.
  // `refused`: the source's own rejection of the input (Message::rejection), decided as it is.
  Status Process(Transaction& store, std::string_view bytes, int64_t index, int64_t now_ms,
                 std::vector<Decision>& decisions, const Rejection* refused = nullptr);

  // Process in two halves. Prepare copies `bytes` into `slot`, parses the envelope and runs every
  // check that needs no store (boundary, schema version, contract, payload); it only reads the
  // pipeline, so it may run on another thread than Decide, on another slot. Decide makes the
  // decisions of a prepared event against the store, in input order, on one thread.
  Result<std::unique_ptr<PreparedEvent>> NewPreparedEvent() const;
  void Prepare(PreparedEvent& slot, std::string_view bytes,
               const Rejection* refused = nullptr) const;
  Status Decide(Transaction& store, PreparedEvent& slot, int64_t index, int64_t now_ms,
                std::vector<Decision>& decisions);
  // Adds the keys Decide of a prepared event reads (its ledger row and subject for every
  // consumer it goes to) to `keys`, for one Transaction::Load of a whole batch.
  void AddKeys(const PreparedEvent& slot, BatchKeys& keys) const;
  // Decide for the consumer `consumer` alone (empty: every consumer, as Decide does): the replay
  // of an input one consumer quarantined. A consumer that is not configured, or no longer
  // subscribes to the event's type, answers unrouted (reason no-subscriber).
  Status DecideFor(Transaction& store, PreparedEvent& slot, std::string_view consumer,
                   int64_t index, int64_t now_ms, std::vector<Decision>& decisions);
  // DecideFor one consumer (`consumer` not empty), each decision also carrying the event as the
  // consumer reads it (Decision::read_event, read_schema_version): what a service applies itself
  // (evident_decide).
  Status DecideReading(Transaction& store, PreparedEvent& slot, std::string_view consumer,
                       int64_t index, int64_t now_ms, std::vector<Decision>& decisions);

  const Config& config() const;
  // For a projection set otherwise than by an applied event (a person's correction,
  // correction.h), before it is put, once the subject's gap records are closed: applies its
  // deferred successors in version order, as after an applied event, and opens a gap record for
  // a hole that remains behind them. `projection` (of a consumer this pipeline decides for) is
  // updated; the caller puts it. kInvalidArgument for a consumer the pipeline does not decide
  // for.
  Status DrainAfterCorrection(Transaction& tx, Projection& projection, int64_t now_ms,
                              std::vector<Decision>& decisions);
  // Outbox partitions the reports a decision appends (a same-version conflict's report to the
  // owner) are spread over by subject (outbox.h). Default 1; Consume sets its
  // ConsumeOptions::outbox_partition_count.
  void SetOutboxPartitionCount(int64_t partition_count);
  // The ids of the consumers it decides for, in the config's order (Transaction::WillDecide).
  std::vector<std::string> ConsumerIds() const;

  // A quarantine record of `bytes` with what the envelope lets read of them (source, id, type,
  // subject; less when it refuses them) and the bytes: for an input quarantined outside a
  // decision (retries exhausted), so that it has the identity a re-delivery would have.
  QuarantineRecord Identify(std::string_view bytes);

 private:
  struct Impl;
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace evident

namespace evident {

// A committed batch, as ConsumeOptions::on_committed sees it.
struct CommittedBatch {
  std::span<const Decision> decisions;  // every decision of the batch, in order
  size_t events = 0;                    // input events the batch decided
  double commit_seconds = 0;            // the store's commit of the batch
};

struct ConsumeSummary;

struct ConsumeOptions {
  std::string input =
      "-";  // NDJSON file, or "-" for standard input (the overload without a Source)
  // Skip the input lines that an earlier run already committed (the input's checkpoint).
  bool resume = false;
  // Where each decision goes as one NDJSON line, written and flushed after its batch commits
  // (a file of an Env, or WritableFileOnDescriptor for standard output); may be null. The
  // caller closes it.
  WritableFile* outcomes = nullptr;
  // Progress lines (events, rate, outcomes so far), redrawn in place; null for none.
  std::FILE* progress = nullptr;
  // Cancelled (from any thread, or a signal handler) to end the run cleanly: the source stops,
  // the open batch commits, and Consume returns with `stopped` set. Null: runs to the end.
  const CancelToken* cancel = nullptr;
  // The time each decision is stamped with, and what linger, a batch's age, idle and unreachable
  // time are measured with (Clock::MonotonicMs); null: the system clock.
  Clock* clock = nullptr;
  // Read and prepare the next events on a thread of the loop's own while a batch is decided
  // (true: the throughput path), or fetch each one on the deciding thread when it is needed
  // (false: one thread, so that a run over a source and a ManualClock is the same run every
  // time: the deterministic simulation drives linger, batch age, idle and unreachable time so).
  bool read_ahead = true;
  // End the run, as at the end of the source, once nothing arrived for this long (ms) from a
  // source that could be reached; -1: never. A stream that never ends (JetStream, a pipe kept
  // open) needs it to finish a run. Time the source's broker is unreachable
  // (Source::unreachable) is not idle: a shorter outage is waited out and the idle time starts
  // again once it is back; an outage as long as this ends the run too, with
  // ConsumeSummary::unreachable_error set (the stream may hold messages the run never saw).
  // Before it ends when idle, the run asks the source whether anything is left for it
  // (Source::ConfirmIdle): a source that says so keeps it going, one that cannot answer counts
  // as unreachable.
  int64_t until_idle_ms = -1;
  // At the end of the run, how long to wait for the source to confirm the acknowledgements
  // (Source::FlushAcknowledgements).
  int64_t acknowledgement_wait_ms = 5000;
  // A store that is busy when a batch begins (kUnavailable: another writer holds it past the
  // store's own wait) is tried again with backoff before the run gives up. A batch that fails
  // transiently later (kUnavailable, kAborted) is decided again with the same backoff, then
  // input by input; an input that still cannot be decided is quarantined with reason
  // `retries-exhausted` and the run goes on.
  RetryPolicy busy_retry;
  // Gap deadlines (gaps.h) are checked between batches at most this often, and once at the end
  // of the run; -1: never. (While the source is silent and no cancel token is set, the loop
  // waits for input and checks nothing.)
  int64_t gap_check_interval_ms = 1000;
  // Outbox partitions a replay request or a conflict's report is spread over (outbox.h).
  int64_t outbox_partition_count = 1;
  // Called in every transaction that records the source's position, last before its commit,
  // with the cursor recorded (a consumer group fences each batch with it: group.h). An error
  // fails the batch as a store error would (kFailedPrecondition: the run ends).
  std::function<Status(Transaction&, const Cursor&)> before_commit;
  // Whether each batch records the source's position under its name (Source::name). false when
  // before_commit records positions itself (a group member's, one per partition it holds).
  bool record_position = true;
  // Called after each commit, before the batch is acknowledged to the source (a daemon answers
  // its requests from it). An error ends the run as a failed write of the outcomes would: the
  // decisions stand. Null: nothing is called.
  std::function<Status(const CommittedBatch&)> on_committed;
  // When set, a span per committed batch ("evident.decide", evident/tracing.h), linked to the
  // traces of its events.
  Tracer* tracer = nullptr;
  // When set, and the run ends with an error, receives what it did before the error: its
  // committed batches and their decisions' counts (a consumer group adds up the runs a lost
  // partition ended). Untouched by a run that succeeds.
  ConsumeSummary* partial = nullptr;
};

struct ConsumeSummary {
  int64_t events = 0;   // input events read this run (resumed lines not counted)
  int64_t skipped = 0;  // lines skipped by --resume
  int64_t batches = 0;  // transactions committed
  double seconds = 0;
  bool stopped = false;  // ended by ConsumeOptions::cancel, not by the end of the source
  // consumer ("" for decisions without one) -> count per Outcome.
  std::map<std::string, std::array<int64_t, kOutcomeCount>> counts;
  GapCheck gap_actions;  // what the gap deadline checks did, summed over the run
  // The last gap check that failed (a busy store: it is tried again at the next interval, and
  // never fails the run); empty when none did.
  std::string gap_check_error;
  // Acknowledgements that did not reach the source by the end of the run (a broker's connection
  // was down): every decision is committed, and the broker delivers those messages again (the
  // ledger answers them duplicate). Empty when all did.
  std::string acknowledgement_error;
  // Set when the run ended because the source's broker was unreachable for until_idle_ms (not
  // because it was idle): every decision is committed, but the stream may hold messages this run
  // did not read. Empty otherwise.
  std::string unreachable_error;
};

// Runs a source's events through the pipeline in batches: one store transaction per batch of at
// most config.batch_count_max events, closed early when the source pauses for config.linger_ms.
// The source's position is written in each batch's transaction; the batch is acknowledged to
// the source and its outcomes written only after the commit. With options.resume, the source
// starts from its stored position.
Result<ConsumeSummary> Consume(Pipeline& pipeline, Store& store, Source& source,
                               const ConsumeOptions& options);
// The same over the NDJSON file (or standard input) named by options.input.
Result<ConsumeSummary> Consume(Pipeline& pipeline, Store& store, const ConsumeOptions& options);

}  // namespace evident
