// evident/source.h — where the consume loop's events come from, and where a relay's go.
//
// A Source hands out messages one at a time, in its order. The loop decides a batch of them in
// one store transaction, writes the source's position in that transaction, commits, and only
// then acknowledges the batch to the source: a crash between commit and acknowledgement makes a
// broker redeliver what is already decided, and the ledger absorbs it as duplicates. A batch
// that is rolled back is negatively acknowledged (redelivered after a delay).
//
// Positions are opaque to everyone but their source. While reading, a message carries a Cursor
// (three words the source fills as it likes: cheap to copy per event); the loop turns the cursor
// of the last decided message into the stored text once per commit (EncodePosition). On the
// next run, Start receives that text back.
//
// Implementations: NDJSON files and standard input (OpenNdjsonSource), a list in memory
// (NewMemorySource); a conformance suite (src/transport/source_conformance_test.cc) runs each.
// Thread-safety: Start is called before anything else. Then the loop's reading thread calls
// Fetch while its deciding thread calls Acknowledge and Reject (never at the same time as each
// other, but at the same time as a Fetch): an implementation guards what those share. Stop may
// be called from any thread; skipped() is read once the reading thread has ended.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/rejection.h"
#include "evident/status.h"

namespace evident {

struct Cursor {
  int64_t a = 0, b = 0;
  uint64_t c = 0;
};

struct Message {
  std::string bytes;  // one event, as received
  // Where it stands in the source, for decisions (a file: the 0-based line it begins on, or its
  // place in a batch array).
  int64_t index = 0;
  Cursor cursor;  // the source's position just after this message
  // Set when the source itself found the input cannot be an event, whatever its bytes say (an
  // element of a broken batch array, content after the array, an input larger than the limit):
  // it is decided as this rejection, its bytes kept. Empty for nearly every message.
  std::optional<Rejection> rejection;
};

class Source {
 public:
  virtual ~Source() = default;

  // The key of this source's position in the store ("/abs/path/events.ndjson", "stdin", a
  // stream and consumer name).
  virtual const std::string& name() const = 0;

  // Called once, before the first Fetch: where to begin. nullopt: the beginning (or wherever
  // the source itself remembers). A position this source cannot resume from is refused
  // (kFailedPrecondition, saying why) before anything is fetched.
  virtual Status Start(const std::optional<std::string>& position) = 0;

  enum class Fetched : uint8_t { kMessage, kWouldWait, kEnd };
  // The next message into `out` (its strings keep their capacity). Waits at most `wait_ms` for
  // one (-1: until one arrives or the source ends); kWouldWait when none came in time. After
  // Stop, kEnd.
  virtual Result<Fetched> Fetch(Message& out, int wait_ms) = 0;

  // The text to store for a cursor this source produced.
  virtual std::string EncodePosition(const Cursor& cursor) const = 0;

  // Every message through `cursor` is decided and committed.
  virtual Status Acknowledge(const Cursor& cursor) = 0;
  // The messages after the last acknowledged one through `cursor` were not committed: deliver
  // them again after `delay_ms`. A file source cannot; it reports kFailedPrecondition and the
  // run ends (a --resume run decides them again).
  virtual Status Reject(const Cursor& cursor, int64_t delay_ms) = 0;

  // Ends the source: a waiting Fetch returns soon, later ones return kEnd.
  virtual void Stop() = 0;

  // Called once at the end of a run, after the last Acknowledge: waits at most `timeout_ms` for
  // every acknowledgement given so far to reach the source. kUnavailable saying how many did
  // not (a broker delivers those messages again, and the ledger answers them duplicate). A
  // source whose acknowledgements cannot go astray (a file, memory) has nothing to wait for.
  virtual Status FlushAcknowledgements(int64_t timeout_ms) {
    (void)timeout_ms;
    return Status::Ok();
  }

  // True while the source cannot reach what it reads from (a broker that is down, restarting or
  // cut off), as its last attempt found: a run that ends when idle does not count such time as
  // idle. Read by the deciding thread.
  virtual bool unreachable() const { return false; }

  // Asked when a run that ends when idle has had nothing for that long, before it ends: whether
  // the source itself says nothing is left for this run. A broker's answer (JetStream: its
  // consumer has no message waiting for delivery or for an acknowledgement, the
  // acknowledgements sent so far having reached it) covers what silence cannot: a server frozen
  // or restarted empty, messages held back until their ack wait ends, acknowledgements lost in
  // a restart. false: wait on; an error: the source could not be asked (counted as
  // unreachable). Called by the deciding thread while the reading thread may be in Fetch.
  virtual Result<bool> ConfirmIdle() { return true; }

  // How far through its input the source has handed messages out, when the input has a size
  // (a file): `done` of `total` bytes; total -1 when it has none (a pipe, a broker). Read by
  // the deciding thread while the reading thread may be in Fetch.
  struct InputProgress {
    int64_t done = 0;
    int64_t total = -1;
  };
  virtual InputProgress input_progress() const { return {}; }

  // Messages skipped at Start's position (NDJSON --resume: lines already decided).
  virtual int64_t skipped() const { return 0; }

  // How many messages were behind the last one handed out, as the source last heard (JetStream:
  // the consumer's pending count); nullopt when it does not know. Read by the deciding thread.
  virtual std::optional<int64_t> backlog() const { return std::nullopt; }

  // A member of a group whose broker assigns the partitions (PartitionOwner): each partition of
  // the messages handed out through `cursor` and not acknowledged yet, with the position just
  // after the last of them (what a batch that ends at `cursor` records, one position per
  // partition). kFailedPrecondition ("lease lost") when one of those messages was handed out
  // before a revocation: that batch must not commit, whoever holds its partitions now. Empty
  // for every other source. Called by the deciding thread.
  virtual Result<std::map<int64_t, int64_t>> PartitionPositions(const Cursor& cursor) const {
    (void)cursor;
    return std::map<int64_t, int64_t>();
  }
};

// One partition of a group, as a broker that assigns partitions keeps it (Kafka: OffsetFetch and
// ListOffsets): the offset committed under the group (nullopt: none) and the partition's end,
// the offset after its last record.
struct BrokerPartition {
  int64_t partition = 0;
  std::optional<int64_t> committed;
  int64_t end = 0;
};

// The owner of a group member's partitions when the broker assigns them (Kafka's group
// protocol; registry.h, GroupPartitions::kAssignedByBroker): the source tells it of every
// assignment before it reads a message of it, and of every revocation after the messages it
// handed out of those partitions are committed (or, past a bound, abandoned: the owner's fence
// then refuses them). Called on the source's reading thread, inside Fetch.
class PartitionOwner {
 public:
  virtual ~PartitionOwner() = default;
  // `partitions` were given to this member (of `partition_count`): the owner fences off whoever
  // held them before, then answers where each begins (the position stored for it; one it
  // leaves out begins at the broker's first message). An error ends the source's run with it.
  virtual Result<std::map<int64_t, int64_t>> Assigned(const std::vector<int64_t>& partitions,
                                                      int64_t partition_count) = 0;
  // `partitions` are this member's no longer.
  virtual void Revoked(const std::vector<int64_t>& partitions) = 0;
};

struct NdjsonSourceOptions {
  // An event longer than this keeps its first event_bytes_max + 1 bytes and is handed over
  // rejected envelope-too-large; the rest is read past, never held in memory.
  size_t event_bytes_max = size_t{1} << 20;
};

// A file of events, or standard input for "-", read as `evident validate` reads one
// (EventSplitter, docs/envelope.md): one JSON value (pretty-printed or not), a batch array, or
// NDJSON; blank lines are skipped, and memory stays bounded by the largest event, whatever the
// input's size. Each event is handed over as it completes (a line of NDJSON at its newline).
// Its position is the bytes decided, their newlines and their 64-bit FNV-1a hash ("lines=N
// bytes=B hash=H", B just past the last decided event: its line's newline, or the ',' or ']'
// after a batch element; a last line without a newline counts as if it had one): a resumed run
// skips the events those bytes hold only when the input starts with the same bytes, so a
// different file of the same name is refused rather than half-skipped, and a file that grew
// (events appended) resumes where the last run ended.
Result<std::unique_ptr<Source>> OpenNdjsonSource(const std::string& path,
                                                 const NdjsonSourceOptions& options = {});

// A fixed list of messages, in order, named `name`; its position is "offset=N" (the messages
// decided). For programs that embed evident and for tests.
std::unique_ptr<Source> NewMemorySource(std::string name, std::vector<std::string> messages);

}  // namespace evident
