// evident/registry.h — every backend built into this evident, by the scheme of the URI that
// names it: stores ("sqlite:PATH"), sources ("nats://HOST:PORT") and publishers ("file:PATH").
//
// The command line, the daemon and the consumer group open what a URI names through here and
// never look at a scheme themselves: opening, migrating, what each backend is (--help texts,
// `evident --version`), and which options it takes. Adding a backend implements its interface
// (store.h, source.h, publisher.h), adds one row to a table of src/registry/registry.cc, and
// passes that interface's conformance suite; no file of src/cli/ changes (docs/DEVELOPING.md,
// "A new backend").
//
// A URI is "<scheme>:<rest>"; "-" (standard input or output) is a URI of its own. Thread-safety:
// the tables are constant; every function may be called from any thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/publisher.h"
#include "evident/redact.h"
#include "evident/source.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

enum class BackendRole : uint8_t { kStore, kSource, kPublisher };

// One backend built in, for `evident --version` and the --help texts.
struct BackendInfo {
  BackendRole role = BackendRole::kStore;
  std::string_view usage;    // how a URI of it is written: "sqlite:PATH"
  std::string_view summary;  // what it is, in a few words
};
std::vector<BackendInfo> BuiltInBackends();
// The usages of one role joined for a help text or a refusal: "sqlite:PATH, memory:NAME or
// postgresql://USER@HOST:PORT/DB".
std::string BackendUsages(BackendRole role);
// The same of the sources that do not end (brokers), for a daemon.
std::string BrokerUsages();

// Process-wide settings of the backends built in (SQLite's allocator statistics off), for a
// program that is evident: call once, before any store is opened. A program that embeds evident
// and uses these libraries itself leaves this to its own start.
void ConfigureBackendsForProcess();

// ---- Stores (store.h) ----

// What a store backend is, beyond the Store contract every backend keeps.
struct StoreTraits {
  // Several processes may open it at once and decide side by side (a consumer group's members).
  bool shared_by_processes = false;
  // Its own lock wait already backs off for up to StoreOptions::busy_timeout_ms (SQLite's busy
  // handler): a loop does not multiply that bound with retries of its own.
  bool waits_for_locks = false;
};
// The traits of the store `uri` names; kInvalidArgument (naming every known usage) for a URI of
// no known scheme.
Result<StoreTraits> StoreTraitsOf(std::string_view uri);
// The files a store keeps on this machine (SQLite: the database, its -wal, -shm and -journal),
// which an output of the same run must not overwrite; empty for a store kept elsewhere or in
// memory, or a URI of no known scheme.
std::vector<std::string> StoreFiles(std::string_view uri);
// OpenStore and MigrateStore (store.h) dispatch through the same table.

// ---- Sources (source.h) ----

// The options a source may take. Each backend reads those it has and refuses the rest where
// they are given (SourceTakes); fields are named for what they are to any broker.
struct SourceOptions {
  std::string stream;  // the broker's stream (JetStream) or topic
  // The broker's name for this reader, under which it remembers what was acknowledged
  // (JetStream: the durable consumer).
  std::string consumer;
  std::string filter;  // the subjects read; empty: every subject of the prefix
  std::string subject_prefix = "evident";
  int64_t ack_wait_ms = 30'000;  // before the broker delivers an unacknowledged message again
  // A file's or standard input's longest event (NdjsonSourceOptions); a broker's too.
  size_t event_bytes_max = size_t{1} << 20;
  // The client library's own settings, "KEY=VALUE" (Kafka: librdkafka's properties: TLS, SASL).
  std::vector<std::string> properties;
  // Set: the source is one member of the group `consumer` names, whose broker assigns the
  // partitions (GroupPartitions::kAssignedByBroker); the owner is told of each assignment and
  // keeps the positions, one per partition; a member the broker hears nothing from for
  // `session_ms` loses its partitions. Null: the source reads every partition itself.
  PartitionOwner* owner = nullptr;
  int64_t session_ms = 10'000;
};
enum class SourceOption : uint8_t {
  kStream,
  kConsumer,
  kFilter,
  kSubjectPrefix,
  kAckWait,
  kProperties
};

// How a source's partitions are shared by the members of a consumer group (group.h).
enum class GroupPartitions : uint8_t {
  kNone,  // the source cannot be read by a group
  // The store leases each partition to one member; the member opens one source per partition it
  // holds (OpenPartitionSource), which begins at the partition's stored position (JetStream).
  kLeasedByStore,
  // The broker assigns partitions to the members itself (Kafka's group protocol): each member
  // opens one source (OpenSource, its consumer name the group's) and runs one loop over it.
  kAssignedByBroker,
};

struct SourceTraits {
  GroupPartitions group = GroupPartitions::kNone;
  // Its input ends (a file, standard input): Fetch says kEnd at the end rather than waiting for
  // more, as a broker's does. A daemon reads only a source that does not end.
  bool ends = false;
  // The broker remembers what was acknowledged, so Start ignores a stored position (the
  // durable consumer is the position).
  bool remembers_acknowledgements = false;
  // Its position lives in the store alone: every run begins where the store's last commit left
  // it (as a --resume run does), the first at the beginning (Kafka).
  bool resumes_from_store = false;
};
Result<SourceTraits> SourceTraitsOf(std::string_view uri);
// Whether `options` can be those of the source `uri` names, before anything is opened (a subject
// prefix that cannot begin a subject): kInvalidArgument saying why.
Status CheckSourceOptions(std::string_view uri, const SourceOptions& options);
// Whether the source `uri` names reads `option` (false for a URI of no known scheme).
bool SourceTakes(std::string_view uri, SourceOption option);
// Opens the source `uri` names: "-" (standard input) and "file:PATH" read events as
// OpenNdjsonSource does; "nats://HOST:PORT" is a JetStream durable pull consumer;
// "kafka://HOST:PORT[,HOST:PORT...]" every partition of the topic `options.stream` names, its
// offsets committed under the group `options.consumer`.
Result<std::unique_ptr<Source>> OpenSource(std::string_view uri, const SourceOptions& options);
// OpenSource, tried again while the broker answers kUnavailable (a server down or restarting,
// a cluster electing the leader of the stream or of the consumer being made) until `wait_ms`
// has passed since the first try, backing off from 250 ms to 2 s; then kUnavailable with the
// last reason and how long it tried. Any other refusal returns at once. `cancel` (may be null)
// ends the waiting (kUnavailable saying it was stopped). The first failure that is waited out
// is said on `log` (may be null), with the bound.
Result<std::unique_ptr<Source>> OpenSourceWaiting(std::string_view uri,
                                                  const SourceOptions& options, int64_t wait_ms,
                                                  Clock& clock, const CancelToken* cancel,
                                                  std::FILE* log = nullptr);
// The source of one partition of a group whose partitions the store leases
// (GroupPartitions::kLeasedByStore): `name` keys its position in the store, where it begins;
// the broker forgets what it kept for the partition's reader `forget_after_ms` after its last
// read. kFailedPrecondition for a backend whose partitions are not leased.
Result<std::unique_ptr<Source>> OpenPartitionSource(std::string_view uri,
                                                    const SourceOptions& options, std::string name,
                                                    int64_t partition, int64_t forget_after_ms);
// Whether the broker behind `uri` answers and has what `options` name, within `timeout_ms` (a
// readiness check); Ok for a source with nothing to reach (a file).
Status ProbeSource(std::string_view uri, const SourceOptions& options, int64_t timeout_ms = 1000);
// The partitions of the group `options.consumer` as the broker behind `uri` keeps them, for a
// source whose broker assigns partitions (GroupPartitions::kAssignedByBroker; others:
// kFailedPrecondition), within `timeout_ms`.
Result<std::vector<BrokerPartition>> DescribeBrokerGroup(std::string_view uri,
                                                         const SourceOptions& options,
                                                         int64_t timeout_ms = 5000);

// ---- Publishers (publisher.h) ----

struct PublisherOptions {
  std::string stream = "EVENTS";  // the broker's stream or topic
  std::string subject_prefix = "evident";
  // How long the broker drops a second copy of a message id: a relay restarted within it sends
  // nothing twice. At least two minutes (the relay's claim outlives a crash by that much).
  int64_t duplicate_window_ms = 120'000;
  int64_t publish_timeout_ms = 5000;  // for the broker's acknowledgements of one Publish
  int64_t in_flight_max = 256;        // messages awaiting the broker's acknowledgement
  // The client library's own settings, "KEY=VALUE" (Kafka: librdkafka's properties).
  std::vector<std::string> properties;
  // The copies of a stream the publisher creates, and the fewest an existing one may have
  // (0: any); what falls short of `replicas` is said on `warn` (JetStreamOptions).
  int replicas = 1;
  int replicas_required = 0;
  std::function<void(const std::string&)> warn;
};
enum class PublisherOption : uint8_t {
  kStream,
  kSubjectPrefix,
  kDuplicateWindow,
  kPublishTimeout,
  kInFlight,
  kProperties,
  kReplicas
};
bool PublisherTakes(std::string_view uri, PublisherOption option);

// A destination, resolved: what to call it in a summary, and how to open it (again: a relay
// opens a new publisher after a failure).
struct Destination {
  std::string name;  // "stdout", "file:/tmp/out.ndjson", the stream's name
  PublisherFactory open;
};
// "-" (standard output), "file:PATH" (appended and synced), "nats://HOST:PORT" (the stream of
// `options`), "kafka://HOST:PORT[,HOST:PORT...]" (the topic `options.stream` names). Checks the
// options now (a duplicate window under two minutes, an empty stream or a subject prefix that
// cannot begin a subject): kInvalidArgument saying which.
Result<Destination> ResolvePublisher(std::string_view uri, const PublisherOptions& options);

}  // namespace evident
