// evident/publisher.h — where a relay sends what an outbox holds: a broker subject, a file.
//
// A relay reads committed outbox rows in order and hands them to a Publisher in batches. The
// publisher reports how many of the batch the destination has durably accepted (a prefix: the
// destination keeps order); the relay marks exactly those as sent, in a transaction of its own,
// and offers the rest again. A crash between the destination's acceptance and that mark sends
// a message twice, so every message carries an id the destination (or its consumers' ledger)
// deduplicates by: JetStream's Nats-Msg-Id, the CloudEvents id.
//
// Implementations: an NDJSON file (OpenNdjsonPublisher, below); JetStream (evident/jetstream.h);
// Kafka (evident/kafka.h).
// Thread-safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "evident/env.h"
#include "evident/status.h"

namespace evident {

struct OutgoingMessage {
  std::string destination;  // a broker subject; ignored by a file
  std::string id;           // the deduplication id (the event's CloudEvents id)
  std::string bytes;        // the event, exactly as stored in the outbox
  // The event's subject (a partitioning key: Kafka's record key; empty when it names none), and
  // its CloudEvents source, type and id (routing headers a destination may add).
  std::string key, source, type, event_id;
};

// What a destination that numbers messages says about one it accepted (JetStream: the stream
// sequence; duplicate when the id was already there and the sequence is the first copy's).
struct PublishAck {
  uint64_t sequence = 0;
  bool duplicate = false;
};

class Publisher {
 public:
  virtual ~Publisher() = default;

  // Sends `batch` in order. Returns how many messages, from the first, the destination has
  // durably accepted; fewer than the batch (with an error for the first refused one only when
  // nothing was accepted) means the rest must be offered again. kInvalidArgument says the
  // destination refuses that first message for what it is (too large for it; a newline in a
  // line of a file) and will refuse it again as long as it is configured as now; any other
  // error may pass (a destination that is down, slow or full).
  virtual Result<size_t> Publish(std::span<const OutgoingMessage> batch) = 0;

  // The acks of the accepted prefix of the last Publish, in order, when the destination gives
  // any (JetStream); empty otherwise (a file).
  virtual const std::vector<PublishAck>& acks() const {
    static const std::vector<PublishAck> kNone;
    return kNone;
  }

  // Releases the destination; reports what a close reports (a file's last error).
  virtual Status Close() = 0;
};

// Opens (again) a destination: a relay calls it at the start and after a publisher failed.
using PublisherFactory = std::function<Result<std::unique_ptr<Publisher>>()>;

// Appends each message's bytes and a newline to the file at `path` (created when absent) and
// syncs before Publish returns: accepted means on disk. A message whose bytes hold a newline is
// refused (kInvalidArgument): it would read back as two. After a failed append, flush or sync
// every further batch is refused (kFailedPrecondition): the failed batch's bytes may still be in
// the file, and a later sync would make them durable. Open a new publisher to go on; the
// refused messages may then appear before their second copy.
Result<std::unique_ptr<Publisher>> OpenNdjsonPublisher(Env& env, const std::string& path);

// The same onto an open descriptor the caller keeps (standard output: `evident relay --to -`).
// Accepted means written (every byte, through short writes); a regular file is synced as well,
// a pipe cannot be. A failed write refuses every later batch, as above.
Result<std::unique_ptr<Publisher>> OpenFdPublisher(int fd, std::string name);

}  // namespace evident
