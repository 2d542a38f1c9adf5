// evident/kafka.h — Apache Kafka as a relay's destination (Publisher) and as a consume loop's
// Source, over librdkafka (Debian's librdkafka-dev). docs/kafka.md: configuration, guarantees,
// and what the tests (run against librdkafka's mock cluster, tools/kafka-mock) cannot prove.
//
// Publisher: the idempotent producer (enable.idempotence: acks=all, retries that cannot
// duplicate or reorder within one producer id). Each message goes to `topic`, its exact stored
// bytes as the value (CloudEvents structured mode: header content-type
// application/cloudevents+json, and ce_id, ce_source, ce_type for routing), the event's subject
// as the key (murmur2, as Java clients partition: one subject, one partition, in order; no
// subject: no key). Publish waits for every delivery report of the batch, at most
// publish_timeout_ms (librdkafka's message.timeout.ms), and returns the prefix written; a
// record the cluster refuses for what it is (too large, not permitted, invalid) is
// kInvalidArgument, so the relay can park it. A Publish that ends with reports outstanding, or
// a fatal producer error, leaves the publisher refusing further batches: the relay opens a new
// one (a new producer id: what the old one still had in flight may reach the topic twice, and
// the consumer's ledger answers it duplicate).
//
// Source: a consumer of every partition of `topic` (assigned by evident: one process reads the
// topic), committing offsets under the group id `group` for the cluster's own tools; or, with an
// owner, one member of the consumer group `group` (Kafka's group protocol assigns the
// partitions; group.h runs the members). The position is
// kept in evident's store, written in each batch's transaction: "p0=12 p1=40", the next offset
// of each partition; a run begins there, and a partition the position does not name at its
// first offset (a topic read by this store for the first time, or grown). Kafka's committed
// offsets follow each commit of the store and are never read back. A stored offset the topic
// no longer holds (retention removed the records before they were decided, or the topic was
// made again) ends the run with kFailedPrecondition rather than skipping. Cursor.a is the
// partition, Cursor.b the running count of messages handed out (Acknowledge and Reject act on
// every message up to it), Cursor.c the offset. ConfirmIdle asks the brokers: every partition's
// end (its high watermark) is reached and everything handed out acknowledged. Reject seeks each
// partition back to its first unacknowledged offset.
//
// Thread-safety: as source.h and publisher.h say; librdkafka's own threads talk to the brokers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/publisher.h"
#include "evident/source.h"
#include "evident/status.h"

namespace evident {

struct KafkaOptions {
  std::string bootstrap;  // "host:port[,host:port...]" (a kafka:// URI's rest)
  std::string topic;
  // librdkafka properties, set after evident's own (TLS, SASL, timeouts). Those evident's
  // guarantees rest on are refused: enable.idempotence, acks, enable.auto.commit,
  // enable.auto.offset.store, auto.offset.reset, group.id, bootstrap.servers.
  std::vector<std::pair<std::string, std::string>> properties;
  // Publisher: the delivery reports of one Publish (message.timeout.ms).
  int64_t publish_timeout_ms = 30'000;
  // Source: the group its offsets are committed under, and the longest event (a larger record
  // is handed over rejected envelope-too-large, its first event_bytes_max + 1 bytes kept).
  std::string group = "evident";
  size_t event_bytes_max = size_t{1} << 20;
  // Set: the source is a member of `group` by Kafka's own group protocol (subscribe, the broker
  // assigns the partitions, session.timeout.ms = session_ms); `owner` is told of each
  // assignment before any of its records is read, and keeps the positions, one per partition
  // (PartitionPositions); a revocation waits, at most session_ms, for the records handed out of
  // those partitions to be committed. Null: every partition, assigned by evident.
  PartitionOwner* owner = nullptr;
  int64_t session_ms = 10'000;
  // How long opening waits for the cluster's metadata (the topic's partitions).
  int64_t connect_timeout_ms = 10'000;
};

// "KEY=VALUE" into a property, or kInvalidArgument; and whether the set of them can be given
// (none of the properties evident sets itself).
Result<std::pair<std::string, std::string>> ParseKafkaProperty(std::string_view text);
Status CheckKafkaProperties(const std::vector<std::pair<std::string, std::string>>& properties);

Result<std::unique_ptr<Publisher>> OpenKafkaPublisher(const KafkaOptions& options);

// A source named "kafka:<topic>/<group>" (its position's key in the store).
Result<std::unique_ptr<Source>> OpenKafkaSource(const KafkaOptions& options);

// Every partition of the topic as the cluster keeps it for the group `options.group`: the offset
// committed under it (OffsetFetch) and the partition's end (ListOffsets), within `timeout_ms`.
Result<std::vector<BrokerPartition>> DescribeKafkaGroup(const KafkaOptions& options,
                                                        int64_t timeout_ms);

// Whether the cluster answers and has the topic, within `timeout_ms`.
Status ProbeKafka(const KafkaOptions& options, int64_t timeout_ms);

}  // namespace evident
