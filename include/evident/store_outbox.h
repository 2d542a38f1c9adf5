// evident/store_outbox.h — the store's transactional outbox (outbox.h): rows appended in the
// caller's transaction, and a relay's claims, marks, parks and deletions. Part of the Store
// contract (store.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/outbox.h"
#include "evident/status.h"
#include "evident/store_rows.h"

namespace evident {

// Which outbox rows a list holds: every row; the pending ones (neither sent nor parked: what a
// relay publishes); the parked ones (set aside unsent by an operator).
enum class OutboxSelect : uint8_t { kAll, kPending, kParked };

// Outbox writes (store.h, Transaction): an append joins the caller's transaction; a relay marks
// what the destination accepted in one of its own.
class OutboxWrites {
 public:
  virtual ~OutboxWrites() = default;

  // The outbox (outbox.h): rows appended in the caller's transaction commit with its other
  // writes. `row.seq` is ignored (the store assigns it), and so are the delivery fields
  // (attempts, last error and time, sent time, stream, stream sequence: a new row has none).
  virtual Result<OutboxAppend> AppendOutbox(const OutboxRow& row) = 0;

  // Unsent rows with a seq above `after_seq`, by seq. rows_max >= 0.
  virtual Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) = 0;

  // Records the broker's acknowledgement: the stream (or file) and the sequence it gave, nullopt
  // for a destination that numbers nothing. A row parked meanwhile (ParkOutbox while a relay
  // had it in hand) is sent, no longer parked: the broker has it. A row already sent keeps its
  // first acknowledgement;
  // no row of that seq: kNotFound (from this call, or from the commit of a store that sends the
  // call without waiting for its answer, as PostgreSQL does so that a relay's batch of marks
  // costs one round trip; the transaction then commits nothing).
  virtual Status MarkOutboxSent(int64_t seq, std::string_view stream,
                                std::optional<int64_t> stream_sequence, int64_t at_ms) = 0;

  // Counts a failed publish attempt. No row of that seq: kNotFound (as MarkOutboxSent).
  virtual Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) = 0;

  // Sets an unsent row aside, for a row the destination keeps refusing (a poison row): no relay
  // round that begins after the commit publishes it (one that had it in hand may still send it
  // and mark it sent), the rows behind it in its partition go out, and it is kept whole with the
  // operator's `reason` until UnparkOutbox makes it pending again (its attempts kept). No row
  // of that seq: kNotFound; a sent or an already parked row: kFailedPrecondition (for Unpark: a
  // row that is not parked).
  virtual Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) = 0;
  virtual Status UnparkOutbox(int64_t seq) = 0;

  // Deletes at most `rows_max` sent rows, oldest seq first, sent before `sent_before_ms`;
  // returns how many. Called in bounded batches until it returns fewer than rows_max.
  virtual Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) = 0;

  // The rows a relay publishes in this transaction, for a store several relays share
  // (Store::RelaysShare): it claims up to `partitions_max` outbox partitions that have pending
  // rows and that no other open transaction holds (round the partitions, from above the last
  // claimed through this store), and returns at most `rows_max` of their pending rows, the
  // partitions taking turns (each one's oldest row, then each one's second, ...; each
  // partition's rows in seq order) so that one partition's backlog does not fill the batch while
  // the others wait. A claimed partition
  // is this transaction's until it ends, so its rows go out in order through one relay at a time
  // and no other relay marks them; a transaction that says nothing to the store for `hold_ms`
  // (a relay paused or cut off mid-publish) loses its claims and cannot commit. Empty when
  // nothing is pending or other relays hold every partition with pending rows.
  // Default: the oldest pending rows (a store whose transactions exclude each other whole).
  virtual Result<Rows<OutboxRow>> ClaimOutbox(int64_t rows_max, int64_t partitions_max,
                                              int64_t hold_ms, int64_t now_ms);
};

// The outbox as one snapshot sees it (store.h, Snapshot).
class OutboxReads {
 public:
  virtual ~OutboxReads() = default;

  // Outbox rows with a seq above `after_seq`, by seq: all, the pending ones or the parked ones.
  virtual Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                             int64_t rows_max = kReadRowsMaxDefault) = 0;

  // Counts over the whole outbox; ages are measured at `now_ms`.
  virtual Result<OutboxStats> OutboxStatsNow(int64_t now_ms) = 0;

  // The outbox row of (source, id), sent or not, while the store keeps it.
  virtual Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                                      std::string_view event_id) = 0;

  // The kept outbox rows of `source` and `subject` from subject version `from_version` on, by
  // subject version, then seq (a row without a version is not listed).
  virtual Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                                  int64_t from_version,
                                                  int64_t rows_max = kReadRowsMaxDefault) = 0;
};

}  // namespace evident
