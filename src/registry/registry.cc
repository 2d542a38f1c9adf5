// The backend tables (evident/registry.h): one row per store, source and publisher scheme.
// Adding a backend adds one row here and its library to src/registry/CMakeLists.txt.
#include "evident/registry.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <span>

#include "evident/jetstream.h"
#include "evident/kafka.h"
#include "evident/retry.h"
#include "evident/store_memory.h"
#include "evident/store_postgres.h"
#include "evident/store_sqlite.h"

namespace evident {
namespace {

// Whether `uri` is of a row written as `prefix` ("sqlite:", "nats://", or "-" alone), with
// something after a prefix.
bool Matches(std::string_view uri, std::string_view prefix) {
  if (prefix == "-") return uri == "-";
  return uri.substr(0, prefix.size()) == prefix && uri.size() > prefix.size();
}

template <typename Row>
const Row* Find(std::span<const Row> rows, std::string_view uri) {
  for (const Row& row : rows) {
    if (Matches(uri, row.prefix)) return &row;
  }
  return nullptr;
}

// "a, b or c".
template <typename Row>
std::string Usages(std::span<const Row> rows) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += i + 1 == rows.size() ? " or " : ", ";
    out += rows[i].usage;
  }
  return out;
}

// A source or destination of no known scheme: "<uri>: expected <usages>".
template <typename Row>
Status Unknown(std::span<const Row> rows, std::string_view uri) {
  return Status::InvalidArgument(RedactUri(uri) + ": expected " + Usages(rows));
}

template <typename Option>
constexpr uint32_t Bits(std::initializer_list<Option> options) {
  uint32_t bits = 0;
  for (const Option option : options) bits |= uint32_t{1} << static_cast<unsigned>(option);
  return bits;
}

// ---- Stores ----

struct StoreRow {
  std::string_view prefix;  // "sqlite:"
  std::string_view usage;
  std::string_view summary;
  StoreTraits traits;
  Result<std::unique_ptr<Store>> (*open)(std::string_view uri, const StoreOptions& options);
  Result<StoreMigration> (*migrate)(std::string_view uri);
  std::vector<std::string> (*files)(std::string_view uri);  // null: none on this machine
};

std::string_view After(std::string_view uri) { return uri.substr(uri.find(':') + 1); }

Result<std::unique_ptr<Store>> OpenSqlite(std::string_view uri, const StoreOptions& options) {
  SqliteOptions sqlite{.busy_timeout_ms = options.busy_timeout_ms,
                       .read_only = options.read_only,
                       .create = options.create};
  if (!options.synchronous.empty()) sqlite.synchronous = options.synchronous;
  return OpenSqliteStore(std::string(After(uri)), sqlite);
}

Result<StoreMigration> MigrateSqlite(std::string_view uri) {
  EVIDENT_RETURN_IF_ERROR(OpenSqlite(uri, {}).status());  // a writable open migrates
  return StoreMigration{.layout = kSqliteLayoutVersion};
}

std::vector<std::string> SqliteFiles(std::string_view uri) {
  const std::string path(After(uri));
  return {path, path + "-wal", path + "-shm", path + "-journal"};
}

Result<std::unique_ptr<Store>> OpenMemory(std::string_view uri, const StoreOptions& options) {
  if (options.read_only) {
    return Status::InvalidArgument("a memory store cannot be opened read-only");
  }
  return OpenMemoryStore(NamedMemoryDatabase(After(uri)));
}

Result<StoreMigration> MigrateMemory(std::string_view uri) {
  return Status::InvalidArgument("a " + std::string(uri.substr(0, uri.find(':'))) +
                                 " store has no layout to migrate");
}

// The whole URI goes to libpq, scheme included.
Result<std::unique_ptr<Store>> OpenPostgresql(std::string_view uri, const StoreOptions& options) {
  return OpenPostgresStore(
      std::string(uri),
      PostgresOptions{.lock_timeout_ms = options.busy_timeout_ms,
                      .idle_transaction_timeout_ms = options.idle_transaction_timeout_ms,
                      .read_only = options.read_only,
                      .create = options.create,
                      .deciders_shared = options.deciders == StoreOptions::Deciders::kShared});
}

Result<StoreMigration> MigratePostgresql(std::string_view uri) {
  EVIDENT_ASSIGN_OR_RETURN(const int64_t before, MigratePostgresStore(std::string(uri)));
  return StoreMigration{.layout_before = before, .layout = kPostgresLayoutVersion};
}

constexpr StoreTraits kEmbedded{.shared_by_processes = false, .waits_for_locks = true};
constexpr StoreTraits kServer{.shared_by_processes = true, .waits_for_locks = false};

constexpr std::array<StoreRow, 4> kStores = {{
    {"sqlite:", "sqlite:PATH", "SQLite file (the embedded default)", kEmbedded, &OpenSqlite,
     &MigrateSqlite, &SqliteFiles},
    {"memory:",
     "memory:NAME",
     "in this process's memory (tests, embedding)",
     {.shared_by_processes = false, .waits_for_locks = false},
     &OpenMemory,
     &MigrateMemory,
     nullptr},
    {"postgresql:", "postgresql://USER@HOST:PORT/DB", "PostgreSQL 15 or later", kServer,
     &OpenPostgresql, &MigratePostgresql, nullptr},
    {"postgres:", "postgres://USER@HOST:PORT/DB", "PostgreSQL (libpq's short scheme)", kServer,
     &OpenPostgresql, &MigratePostgresql, nullptr},
}};

Status UnknownStore(std::string_view uri) {
  return Status::InvalidArgument("unknown store '" + RedactUri(uri) + "' (expected " +
                                 Usages<StoreRow>(kStores) + ")");
}

// ---- Sources ----

struct SourceRow {
  std::string_view prefix;
  std::string_view usage;
  std::string_view summary;
  SourceTraits traits;
  uint32_t takes;  // Bits of the SourceOptions it reads
  Result<std::unique_ptr<Source>> (*open)(std::string_view uri, const SourceOptions& options);
  // Null unless traits.group is kLeasedByStore.
  Result<std::unique_ptr<Source>> (*open_partition)(std::string_view uri,
                                                    const SourceOptions& options, std::string name,
                                                    int64_t partition, int64_t forget_after_ms);
  Status (*probe)(std::string_view uri, const SourceOptions& options, int64_t timeout_ms);
  Status (*check)(const SourceOptions& options);
  // Null unless traits.group is kAssignedByBroker.
  Result<std::vector<BrokerPartition>> (*describe)(std::string_view uri,
                                                   const SourceOptions& options,
                                                   int64_t timeout_ms);
};

Result<std::unique_ptr<Source>> OpenStdin(std::string_view, const SourceOptions& options) {
  return OpenNdjsonSource("-", {.event_bytes_max = options.event_bytes_max});
}
Result<std::unique_ptr<Source>> OpenFile(std::string_view uri, const SourceOptions& options) {
  return OpenNdjsonSource(std::string(After(uri)), {.event_bytes_max = options.event_bytes_max});
}

JetStreamOptions StreamOf(std::string_view uri, const SourceOptions& options) {
  return {.url = std::string(uri),
          .properties = options.properties,
          .stream = options.stream,
          .subject_prefix = options.subject_prefix,
          .ack_wait_ms = options.ack_wait_ms};
}

Result<std::unique_ptr<Source>> OpenJetStream(std::string_view uri, const SourceOptions& options) {
  return OpenJetStreamSource(StreamOf(uri, options), options.consumer, options.filter);
}

// A partition's subjects are the relay's: "<prefix>.p<k>.<type>" (relay.h).
Result<std::unique_ptr<Source>> OpenJetStreamPartition(std::string_view uri,
                                                       const SourceOptions& options,
                                                       std::string name, int64_t partition,
                                                       int64_t forget_after_ms) {
  EVIDENT_RETURN_IF_ERROR(CheckSubjectPrefix(options.subject_prefix));
  return OpenJetStreamPartitionSource(
      StreamOf(uri, options), std::move(name),
      options.subject_prefix + ".p" + std::to_string(partition) + ".>", forget_after_ms);
}

Status ProbeJetStreamSource(std::string_view uri, const SourceOptions& options,
                            int64_t timeout_ms) {
  return ProbeJetStream(StreamOf(uri, options), timeout_ms);
}

Status ProbeNothing(std::string_view, const SourceOptions&, int64_t) { return Status::Ok(); }

Status CheckNothing(const SourceOptions&) { return Status::Ok(); }

// An empty prefix is a consumer of every subject of the stream.
Status CheckJetStream(const SourceOptions& options) {
  EVIDENT_RETURN_IF_ERROR(CheckNatsProperties(options.properties));
  if (options.subject_prefix.empty()) return Status::Ok();
  return CheckSubjectPrefix(options.subject_prefix);
}

// "kafka://a:9092,b:9092": the bootstrap list; each option "KEY=VALUE" a librdkafka property.
Result<KafkaOptions> KafkaOf(std::string_view uri, std::string topic,
                             const std::vector<std::string>& properties) {
  KafkaOptions kafka{.bootstrap = std::string(uri.substr(std::string_view("kafka://").size())),
                     .topic = std::move(topic)};
  for (const std::string& text : properties) {
    EVIDENT_ASSIGN_OR_RETURN(auto property, ParseKafkaProperty(text));
    kafka.properties.push_back(std::move(property));
  }
  EVIDENT_RETURN_IF_ERROR(CheckKafkaProperties(kafka.properties));
  return kafka;
}

Result<KafkaOptions> KafkaSourceOf(std::string_view uri, const SourceOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(KafkaOptions kafka, KafkaOf(uri, options.stream, options.properties));
  kafka.group = options.consumer;
  kafka.event_bytes_max = options.event_bytes_max;
  kafka.owner = options.owner;
  kafka.session_ms = options.session_ms;
  return kafka;
}

Result<std::unique_ptr<Source>> OpenKafka(std::string_view uri, const SourceOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(const KafkaOptions kafka, KafkaSourceOf(uri, options));
  return OpenKafkaSource(kafka);
}

Status ProbeKafkaSource(std::string_view uri, const SourceOptions& options, int64_t timeout_ms) {
  EVIDENT_ASSIGN_OR_RETURN(const KafkaOptions kafka, KafkaSourceOf(uri, options));
  return ProbeKafka(kafka, timeout_ms);
}

Result<std::vector<BrokerPartition>> DescribeKafka(std::string_view uri,
                                                   const SourceOptions& options,
                                                   int64_t timeout_ms) {
  EVIDENT_ASSIGN_OR_RETURN(const KafkaOptions kafka, KafkaSourceOf(uri, options));
  return DescribeKafkaGroup(kafka, timeout_ms);
}

Status CheckKafka(const SourceOptions& options) {
  if (options.stream.empty()) return Status::InvalidArgument("a Kafka source needs a topic");
  for (const std::string& text : options.properties) {
    EVIDENT_RETURN_IF_ERROR(ParseKafkaProperty(text).status());
  }
  return Status::Ok();
}

using S = SourceOption;
const std::array<SourceRow, 4> kSources = {{
    {"nats://",
     "nats://HOST:PORT[,HOST:PORT...]",
     "NATS JetStream, a durable pull consumer",
     {.group = GroupPartitions::kLeasedByStore, .remembers_acknowledgements = true},
     Bits({S::kStream, S::kConsumer, S::kFilter, S::kSubjectPrefix, S::kAckWait, S::kProperties}),
     &OpenJetStream,
     &OpenJetStreamPartition,
     &ProbeJetStreamSource,
     &CheckJetStream,
     nullptr},
    {"kafka://",
     "kafka://HOST:PORT[,HOST:PORT...]",
     "Apache Kafka, a topic (or a group's share of it), positions in the store",
     {.group = GroupPartitions::kAssignedByBroker, .resumes_from_store = true},
     Bits({S::kStream, S::kConsumer, S::kProperties}),
     &OpenKafka,
     nullptr,
     &ProbeKafkaSource,
     &CheckKafka,
     &DescribeKafka},
    {"file:",
     "file:PATH",
     "a file of events (NDJSON, an array or one event)",
     {.ends = true},
     0,
     &OpenFile,
     nullptr,
     &ProbeNothing,
     &CheckNothing,
     nullptr},
    {"-",
     "-",
     "standard input (NDJSON, an array or one event)",
     {.ends = true},
     0,
     &OpenStdin,
     nullptr,
     &ProbeNothing,
     &CheckNothing,
     nullptr},
}};

// ---- Publishers ----

struct PublisherRow {
  std::string_view prefix;
  std::string_view usage;
  std::string_view summary;
  uint32_t takes;  // Bits of the PublisherOptions it reads
  Result<Destination> (*resolve)(std::string_view uri, const PublisherOptions& options);
};

Result<Destination> ResolveStdout(std::string_view, const PublisherOptions&) {
  return Destination{"stdout", [] { return OpenFdPublisher(STDOUT_FILENO, "standard output"); }};
}

Result<Destination> ResolveFile(std::string_view uri, const PublisherOptions&) {
  std::string path(After(uri));
  return Destination{std::string(uri), [path] { return OpenNdjsonPublisher(PosixEnv(), path); }};
}

Result<Destination> ResolveJetStream(std::string_view uri, const PublisherOptions& options) {
  if (options.duplicate_window_ms < 120'000) {
    return Status::InvalidArgument("the duplicate window (" +
                                   std::to_string(options.duplicate_window_ms) +
                                   " ms) is shorter than two minutes");
  }
  if (options.stream.empty()) {
    return Status::InvalidArgument("a JetStream destination needs a stream");
  }
  EVIDENT_RETURN_IF_ERROR(CheckSubjectPrefix(options.subject_prefix));
  EVIDENT_RETURN_IF_ERROR(CheckNatsProperties(options.properties));
  JetStreamOptions js{.url = std::string(uri),
                      .properties = options.properties,
                      .stream = options.stream,
                      .subject_prefix = options.subject_prefix,
                      .duplicate_window_ms = options.duplicate_window_ms,
                      .publish_timeout_ms = options.publish_timeout_ms,
                      .in_flight_max = options.in_flight_max,
                      .replicas = options.replicas,
                      .replicas_required = options.replicas_required,
                      .warn = options.warn};
  if (js.replicas < 1 || js.replicas_required > js.replicas) {
    return Status::InvalidArgument(
        "a stream is created with at least one replica (--replicas), "
        "and with at least the replicas it requires "
        "(--require-replicas)");
  }
  return Destination{options.stream, [js] { return OpenJetStreamPublisher(js); }};
}

Result<Destination> ResolveKafka(std::string_view uri, const PublisherOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(KafkaOptions kafka, KafkaOf(uri, options.stream, options.properties));
  if (kafka.topic.empty()) return Status::InvalidArgument("a Kafka destination needs a topic");
  kafka.publish_timeout_ms = options.publish_timeout_ms;
  return Destination{options.stream, [kafka] { return OpenKafkaPublisher(kafka); }};
}

using P = PublisherOption;
const std::array<PublisherRow, 4> kPublishers = {{
    {"nats://", "nats://HOST:PORT[,HOST:PORT...]", "NATS JetStream, deduplicated by the event id",
     Bits({P::kStream, P::kSubjectPrefix, P::kDuplicateWindow, P::kPublishTimeout, P::kInFlight,
           P::kReplicas, P::kProperties}),
     &ResolveJetStream},
    {"kafka://", "kafka://HOST:PORT[,HOST:PORT...]",
     "Apache Kafka, the idempotent producer, keyed by subject",
     Bits({P::kStream, P::kPublishTimeout, P::kProperties}), &ResolveKafka},
    {"file:", "file:PATH", "a file, appended one event per line and synced", 0, &ResolveFile},
    {"-", "-", "standard output, one event per line", 0, &ResolveStdout},
}};

}  // namespace

std::vector<BackendInfo> BuiltInBackends() {
  std::vector<BackendInfo> out;
  for (const StoreRow& r : kStores) out.push_back({BackendRole::kStore, r.usage, r.summary});
  for (const SourceRow& r : kSources) out.push_back({BackendRole::kSource, r.usage, r.summary});
  for (const PublisherRow& r : kPublishers) {
    out.push_back({BackendRole::kPublisher, r.usage, r.summary});
  }
  return out;
}

std::string BackendUsages(BackendRole role) {
  switch (role) {
    case BackendRole::kStore:
      return Usages<StoreRow>(kStores);
    case BackendRole::kSource:
      return Usages<SourceRow>(kSources);
    case BackendRole::kPublisher:
      return Usages<PublisherRow>(kPublishers);
  }
  return "";
}

void ConfigureBackendsForProcess() { (void)ConfigureSqliteProcess(); }

std::string BrokerUsages() {
  std::vector<SourceRow> brokers;
  for (const SourceRow& row : kSources) {
    if (!row.traits.ends) brokers.push_back(row);
  }
  return Usages<SourceRow>(brokers);
}

Result<std::unique_ptr<Store>> OpenStore(std::string_view uri, const StoreOptions& options) {
  const StoreRow* row = Find<StoreRow>(kStores, uri);
  if (row == nullptr) return UnknownStore(uri);
  return row->open(uri, options);
}

Result<StoreMigration> MigrateStore(std::string_view uri) {
  const StoreRow* row = Find<StoreRow>(kStores, uri);
  if (row == nullptr) return UnknownStore(uri);
  return row->migrate(uri);
}

Result<StoreTraits> StoreTraitsOf(std::string_view uri) {
  const StoreRow* row = Find<StoreRow>(kStores, uri);
  if (row == nullptr) return UnknownStore(uri);
  return row->traits;
}

std::vector<std::string> StoreFiles(std::string_view uri) {
  const StoreRow* row = Find<StoreRow>(kStores, uri);
  if (row == nullptr || row->files == nullptr) return {};
  return row->files(uri);
}

Result<SourceTraits> SourceTraitsOf(std::string_view uri) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return Unknown<SourceRow>(kSources, uri);
  return row->traits;
}

Status CheckSourceOptions(std::string_view uri, const SourceOptions& options) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return Unknown<SourceRow>(kSources, uri);
  return row->check(options);
}

bool SourceTakes(std::string_view uri, SourceOption option) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return false;
  return (row->takes & Bits({option})) != 0;
}

Result<std::unique_ptr<Source>> OpenSource(std::string_view uri, const SourceOptions& options) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return Unknown<SourceRow>(kSources, uri);
  Result<std::unique_ptr<Source>> source = row->open(uri, options);
  // "<uri>: why", its code kept
  if (!source.ok()) return source.status().Annotate(RedactUri(uri));
  return source;
}

Result<std::unique_ptr<Source>> OpenSourceWaiting(std::string_view uri,
                                                  const SourceOptions& options, int64_t wait_ms,
                                                  Clock& clock, const CancelToken* cancel,
                                                  std::FILE* log) {
  const int64_t start_ms = clock.MonotonicMs();
  int64_t backoff_ms = 250;
  for (int attempt = 1;; ++attempt) {
    Result<std::unique_ptr<Source>> source = OpenSource(uri, options);
    if (source.ok() || source.status().code() != Code::kUnavailable) return source;
    const int64_t waited_ms = clock.MonotonicMs() - start_ms;
    const auto tried = [&](std::string_view how) {
      return Status::Unavailable(source.status().message() + " (" + std::string(how) + " " +
                                 std::to_string(waited_ms) + " ms, " + std::to_string(attempt) +
                                 (attempt == 1 ? " try)" : " tries)"));
    };
    if (waited_ms >= wait_ms) return tried("unavailable for");
    if (attempt == 1 && log != nullptr) {
      std::fprintf(log, "evident: %s; trying again for up to %lld ms\n",
                   source.status().ToString().c_str(), static_cast<long long>(wait_ms));
      std::fflush(log);
    }
    if (!SleepUnlessCancelled(clock, std::min(backoff_ms, wait_ms - waited_ms), cancel)) {
      return tried("stopped while waiting, after");
    }
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 2000);
  }
}

Result<std::unique_ptr<Source>> OpenPartitionSource(std::string_view uri,
                                                    const SourceOptions& options, std::string name,
                                                    int64_t partition, int64_t forget_after_ms) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return Unknown<SourceRow>(kSources, uri);
  if (row->open_partition == nullptr) {
    return Status::FailedPrecondition("a " + std::string(row->usage) +
                                      " source has no partitions a store leases");
  }
  return row->open_partition(uri, options, std::move(name), partition, forget_after_ms);
}

Result<std::vector<BrokerPartition>> DescribeBrokerGroup(std::string_view uri,
                                                         const SourceOptions& options,
                                                         int64_t timeout_ms) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return Unknown<SourceRow>(kSources, uri);
  if (row->describe == nullptr) {
    return Status::FailedPrecondition("a " + std::string(row->usage) +
                                      " source has no group its broker keeps");
  }
  return row->describe(uri, options, timeout_ms);
}

Status ProbeSource(std::string_view uri, const SourceOptions& options, int64_t timeout_ms) {
  const SourceRow* row = Find<SourceRow>(kSources, uri);
  if (row == nullptr) return Unknown<SourceRow>(kSources, uri);
  return row->probe(uri, options, timeout_ms);
}

bool PublisherTakes(std::string_view uri, PublisherOption option) {
  const PublisherRow* row = Find<PublisherRow>(kPublishers, uri);
  if (row == nullptr) return false;
  return (row->takes & Bits({option})) != 0;
}

Result<Destination> ResolvePublisher(std::string_view uri, const PublisherOptions& options) {
  const PublisherRow* row = Find<PublisherRow>(kPublishers, uri);
  if (row == nullptr) return Unknown<PublisherRow>(kPublishers, uri);
  Result<Destination> destination = row->resolve(uri, options);
  if (!destination.ok()) return destination.status().Annotate(RedactUri(uri));
  return destination;
}

}  // namespace evident
