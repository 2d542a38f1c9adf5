// evident/relay.h — the relay: publishes the outbox's committed rows, in seq order, with their
// exact bytes, and marks a row sent only once the destination durably accepted it.
//
// One round: read the oldest pending rows (a read snapshot, no write lock), hand them to the
// Publisher as one batch, then in one transaction mark the accepted prefix sent (with the
// destination's sequence) and count an attempt, with the error, on every row offered and not
// accepted (a refusal for what the first row is counts on that row alone; below). When a batch was
// accepted whole, the next one is read and handed to the Publisher (on a worker thread) before this
// one is marked, so the marking transaction and its fsync overlap the next publish; a row is still
// marked only after its own acceptance. Those rows are offered again, same bytes and same id, after
// a backoff that doubles from backoff_initial_ms up to backoff_max_ms with jitter; while the
// destination is down the relay sleeps, it does not spin. A publisher that fails is closed and
// opened again.
//
// A crash between the destination's acceptance and the mark sends a row twice: the message id
// (RelayMessageId) lets JetStream drop the copy inside its duplicate window, and a consumer's
// ledger recognises it after that. Rows go out in seq order; a row the destination keeps
// refusing holds back the rows behind it (its attempts and last error show in `outbox stats`
// and `outbox list`): order is kept, nothing is skipped. With park_refused_after_attempts, a
// row the destination refuses for what it is (too large for it, say: Publisher's
// kInvalidArgument), not for being down, is parked once its attempts reach that number (or
// more), in the
// transaction that counts the last one: kept whole with the relay's reason, out of the way of
// the rows behind it, until an operator unparks it (Transaction::ParkOutbox). A round whose
// first row is refused so counts the attempt on that row alone (the rows behind it were held
// back, not refused), and a round that parks a row is progress: the next round, at once, sends
// the rows behind it.
//
// Subjects: a message goes to "<partition token>.<type tokens>" under the publisher's prefix,
// e.g. evident.p3.order.cancelled (RelayDestination). A consumer that owns partition 3 filters
// on "evident.p3.>".
//
// Sent rows are deleted once kept keep_sent_ms (0: at once), in transactions of at most
// delete_count_max rows, at most once per retention_interval_ms and at the end of a --once run.
//
// Several relays on one store (PostgreSQL, Store::RelaysShare), for availability: a round
// claims outbox partitions (Transaction::ClaimOutbox: their rows in outbox_partition, locked
// FOR UPDATE SKIP LOCKED) and publishes, marks and commits their oldest rows in the claiming
// transaction. A partition's rows therefore go out in order through one relay at a time, two
// relays never both mark a row, and relays on different partitions run side by side. A relay
// that dies or stalls holding a claim loses it after claim_hold_ms (its connection closed, or
// ended by the server) and another relay offers its rows again: the message ids let JetStream
// drop the copies. An idle relay sleeps until a producer's commit notifies it (LISTEN/NOTIFY),
// or notify_wait_ms at most. Claim mode does not overlap marking with the next publish.
//
// Thread-safety: RunRelay is one thread's, with a Store of its own. One relay per SQLite store
// at a time (a second one would publish rows twice, which deduplication absorbs but which
// wastes the broker's work).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/publisher.h"
#include "evident/status.h"
#include "evident/store.h"
#include "evident/tracing.h"

namespace evident {

struct RelayOptions {
  // Recorded with every sent row as its `stream`: the JetStream stream's name, "file:PATH", or
  // "stdout".
  std::string destination_name;
  // Partitions to spread subjects over (FNV-1a 64 of the event's subject, as outbox.h). nullopt:
  // the partition stored with the row at append.
  std::optional<int64_t> partition_count;
  // Rows per publish batch (and per marking transaction). The publisher bounds how many of them
  // await their acknowledgement at once (JetStreamOptions::in_flight_max). 1,024 rather than
  // 256: the window drains once per batch, so fewer batches keep the destination busier
  // (relay/raw 0.73-0.85 against 0.64-0.70 in bench/relay_bench, docs/BENCHMARKS.md).
  int64_t batch_count_max = 1024;
  // How long an idle relay waits before it looks for new rows again.
  int64_t poll_ms = 50;
  // The wait after a failed round doubles from the first to the last, each wait drawn between
  // half and all of it (jitter, so relays restarting together do not retry in step).
  int64_t backoff_initial_ms = 100;
  int64_t backoff_max_ms = 10'000;
  // On a store several relays share (Store::RelaysShare: PostgreSQL), each round claims up to
  // claim_partitions_max outbox partitions with pending rows that no other relay holds and
  // publishes and marks their oldest rows inside the claiming transaction (see above).
  int64_t claim_partitions_max = 8;
  // A relay that holds a claim this long without a word to the store (paused, cut off, or a
  // publish that hangs past it) loses it: the store ends its session, another relay takes the
  // partitions over, and this one's marks are refused. Keep it above the publisher's timeout.
  int64_t claim_hold_ms = 30'000;
  // How long an idle relay on such a store waits for word of a committed row (PostgreSQL:
  // LISTEN/NOTIFY) before it looks again anyway; the word wakes it at once.
  int64_t notify_wait_ms = 1'000;
  // Sent rows older than this are deleted.
  int64_t keep_sent_ms = int64_t{7} * 24 * 3600 * 1000;
  // false: the relay deletes no sent row; the configuration's retention (retention.h) removes
  // them, archived first when it archives.
  bool delete_sent = true;
  int64_t delete_count_max = 1000;
  int64_t retention_interval_ms = 60'000;
  // Publish what is pending, then return (after the retention pass). A --once run gives up after
  // once_failures_max failed rounds in a row, returning the last error.
  bool once = false;
  int once_failures_max = 8;
  // With `once`: a progress line here (ProgressBar, evident/progress.h) of the rows sent out of
  // those pending when the run began; null: none.
  std::FILE* progress = nullptr;
  // When set, a span per batch ("evident.relay", evident/tracing.h) from its read to its
  // marking, linked to the traces of its events (their `traceparent`).
  Tracer* tracer = nullptr;
  // A row the destination refuses for what it is (Publisher: kInvalidArgument) is parked when
  // the attempt that refusal counts brings its attempts (failed ones of any kind, this run's and
  // earlier runs': an outage, a batch not acknowledged) to this number or more. 0: never; such
  // a row holds back the rows behind it.
  int64_t park_refused_after_attempts = 0;
  // Set to end a run cleanly: the round in hand finishes (its marks commit), then RunRelay
  // returns with `stopped`.
  const CancelToken* cancel = nullptr;
  Clock* clock = nullptr;  // null: the system clock
  // Where a series of failed rounds is told as it goes: its first round and every tenth after,
  // with the error (null: only the summary's last_error tells).
  std::FILE* log = nullptr;
};

struct RelaySummary {
  int64_t sent = 0;        // rows marked sent this run
  int64_t duplicates = 0;  // of them, ones the destination already held (JetStream's duplicate)
  int64_t failed_rounds = 0;
  int64_t deleted = 0;  // sent rows deleted by retention
  int64_t parked = 0;   // rows parked by park_refused_after_attempts
  double seconds = 0;
  bool stopped = false;    // ended by the cancel token
  std::string last_error;  // of the last failed round; empty when none failed
};

// Runs the relay until the token is cancelled (or, with options.once, until nothing is pending).
// Errors: the store failing for a reason other than being busy; a --once run that gave up.
Result<RelaySummary> RunRelay(Store& store, const PublisherFactory& open_publisher,
                              const RelayOptions& options);

// "p<partition>.<type>", each dot-separated token of the type kept when it is made of
// [A-Za-z0-9_-] and otherwise with every other byte replaced by '_' (an empty token becomes
// "_"), so the subject is always valid and never a wildcard.
std::string RelayDestination(int64_t partition, std::string_view type);

// "<source> <id>", each with the bytes outside '!'..'~' and '%' written as %XX: printable, fit
// for a header, and one (source, id) pair never shares it with another.
std::string RelayMessageId(std::string_view source, std::string_view id);

}  // namespace evident
