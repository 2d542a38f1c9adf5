// `evident relay`: publishes a store's outbox to a destination (registry.h). The loop,
// the marking and the backoff are the library's (evident/relay.h); this file parses flags,
// chooses the destination and formats the summary.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/join.h"
#include "evident/cancel.h"
#include "evident/env.h"
#include "evident/registry.h"
#include "evident/relay.h"
#include "evident/retention.h"
#include "evident/store.h"

namespace evident::cli {
namespace {

struct RelayFlags {
  std::string store, to, otlp_endpoint;
  std::string config;  // only its `retention:` (read with --once too, but not run)
  std::string stream = "EVENTS";
  std::string subject_prefix = "evident";
  int64_t partitions = 0;  // 0: the partition stored with each row
  bool once = false;
  std::string progress = "auto";  // with --once
  std::string keep_sent;          // empty: 7d, or left to --config's retention when it retains them
  std::string duplicate_window = "2m";
  int64_t batch_count_max = 1024;
  int64_t poll_ms = 50;
  int64_t in_flight_max = 256;
  int64_t publish_timeout_ms = 5000;
  int64_t backoff_max_ms = 10'000;
  int once_failures_max = 8;
  int64_t claim_partitions_max = 8;
  int64_t claim_hold_ms = 30'000;
  int64_t park_refused_after = 0;  // 0: never
  int replicas = 0;                // 0: --require-replicas, or 1
  int replicas_required = 0;
  std::vector<std::string> broker_config;  // --broker-config KEY=VALUE, repeatable
  // The destination's options given on the command line, with what they are to a publisher.
  std::vector<std::pair<std::string, PublisherOption>> given;
};

// The destination --to names, its options checked (registry.h).
Result<Destination> ChooseDestination(const RelayFlags& flags) {
  EVIDENT_ASSIGN_OR_RETURN(const int64_t window_ms, ParseDurationMs(flags.duplicate_window));
  const PublisherOptions options{
      .stream = flags.stream,
      .subject_prefix = flags.subject_prefix,
      .duplicate_window_ms = window_ms,
      .publish_timeout_ms = flags.publish_timeout_ms,
      .in_flight_max = flags.in_flight_max,
      .properties = flags.broker_config,
      .replicas = flags.replicas > 0 ? flags.replicas : std::max(1, flags.replicas_required),
      .replicas_required = flags.replicas_required,
      .warn = [](const std::string& what) {
        // Once per process: a destination is opened again after every failed round.
        static std::set<std::string> said;
        if (!said.insert(what).second) return;
        std::cerr << "evident relay: warning: " << what << "\n";
      }};
  Result<Destination> destination = ResolvePublisher(flags.to, options);
  if (!destination.ok()) return Status::InvalidArgument("--to " + destination.status().message());
  return destination;
}

// Options the destination does not read, given on the command line: refused rather than
// ignored (a `--to - --stream ORDERS` wrote to standard output as if the stream had been heard).
Result<Destination> ChooseDestinationChecked(const RelayFlags& flags) {
  EVIDENT_ASSIGN_OR_RETURN(Destination destination, ChooseDestination(flags));  // --to first
  std::vector<std::string> unread;
  for (const auto& [name, option] : flags.given) {
    if (!PublisherTakes(flags.to, option)) unread.push_back(name);
  }
  if (!unread.empty()) {
    return Status::InvalidArgument(Join(unread) +
                                   (unread.size() == 1 ? ": not an option" : ": not options") +
                                   " of the destination --to " + RedactUri(flags.to));
  }
  return destination;
}

void PrintSummary(const RelaySummary& s, const std::string& destination) {
  std::fprintf(stderr,
               "evident relay: %lld sent to %s (%lld the destination already held) in %.2f s; "
               "%lld failed rounds; %lld parked; %lld sent rows deleted\n",
               static_cast<long long>(s.sent), destination.c_str(),
               static_cast<long long>(s.duplicates), s.seconds,
               static_cast<long long>(s.failed_rounds), static_cast<long long>(s.parked),
               static_cast<long long>(s.deleted));
  if (!s.last_error.empty()) std::fprintf(stderr, "  last error: %s\n", s.last_error.c_str());
}

// --config's `retention:` (none without --config); read with --once too, so that a file that
// cannot be read is refused whatever the mode.
Result<RetentionConfig> RelayRetention(const RelayFlags& flags) {
  if (flags.config.empty()) return RetentionConfig{};
  EVIDENT_ASSIGN_OR_RETURN(const Config config, LoadConfig(flags.config));
  return config.retention;
}

int RunRelayCommand(const RelayFlags& flags) {
  Result<Destination> destination = ChooseDestinationChecked(flags);
  // Without --keep-sent: the library's default (7d).
  Result<int64_t> keep_sent_ms = flags.keep_sent.empty()
                                     ? Result<int64_t>(RelayOptions{}.keep_sent_ms)
                                     : ParseDurationMs(flags.keep_sent);
  Result<RetentionConfig> retention = RelayRetention(flags);
  if (!destination.ok() || !keep_sent_ms.ok() || !retention.ok()) {
    std::cerr << "evident relay: "
              << (!destination.ok()    ? destination.status()
                  : !keep_sent_ms.ok() ? keep_sent_ms.status()
                                       : retention.status())
                     .ToString()
              << "\n";
    return kExitUsage;
  }
  auto store = OpenStore(flags.store, {.create = false});
  if (!store.ok()) {
    std::cerr << "evident relay: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<OtlpTracer>> tracer = OpenTracer(flags.otlp_endpoint, nullptr);
  if (!tracer.ok()) {
    std::cerr << "evident relay: " << tracer.status().ToString() << "\n";
    return kExitUsage;
  }
  static CancelToken stop;
  RelayOptions options{.destination_name = destination->name,
                       .batch_count_max = flags.batch_count_max,
                       .poll_ms = flags.poll_ms,
                       .backoff_max_ms = flags.backoff_max_ms,
                       .claim_partitions_max = flags.claim_partitions_max,
                       .claim_hold_ms = flags.claim_hold_ms,
                       .keep_sent_ms = *keep_sent_ms,
                       .once = flags.once,
                       .once_failures_max = flags.once_failures_max,
                       .progress = flags.once ? ProgressFile(flags.progress) : nullptr,
                       .park_refused_after_attempts = flags.park_refused_after,
                       .cancel = &stop,
                       .log = stderr};
  if (flags.partitions > 0) options.partition_count = flags.partitions;
  // A configuration that retains sent rows has them (archived first when it archives) when its
  // retention runs here (not with --once), unless --keep-sent is given too.
  const bool retains_sent =
      !flags.once && retention->every_ms > 0 &&
      retention->older_than_ms[static_cast<size_t>(RetainedKind::kOutbox)] > 0;
  options.delete_sent = !retains_sent || !flags.keep_sent.empty();
  options.tracer = tracer->get();
  InstallStopSignals(stop);
  // Beside a relay that keeps running (not --once), on a store of its own.
  const std::unique_ptr<RetentionTimer> retaining =
      flags.once ? nullptr
                 : StartRetention(
                       *retention, [&flags] { return OpenStore(flags.store, {.create = false}); },
                       "relay");
  Result<RelaySummary> summary = RunRelay(**store, destination->open, options);
  if (retaining != nullptr) retaining->Stop();
  CloseTracer(std::move(*tracer), "relay");
  if (!summary.ok()) {
    std::cerr << "evident relay: " << summary.status().ToString() << "\n";
    return summary.status().code() == Code::kUnavailable ? kExitNegative : kExitUsage;
  }
  PrintSummary(*summary, destination->name);
  return kExitOk;
}

// The copies of a JetStream stream: of one the relay creates, and the fewest it publishes to.
void AddDurabilityOptions(CLI::App* cmd, RelayFlags& flags) {
  cmd->add_option("--replicas", flags.replicas,
                  "Copies of a stream the relay creates (a JetStream cluster's servers: 3 or 5; "
                  "default 1, or --require-replicas); an existing stream with fewer is warned of")
      ->check(IntegerFrom(1, 5));
  cmd->add_option("--require-replicas", flags.replicas_required,
                  "Refuse to publish to a stream of fewer copies than this")
      ->check(IntegerFrom(1, 5));
}

// What the relay does when rounds fail: backoff, claims on a shared store, giving up, parking.
void AddFailureOptions(CLI::App* cmd, RelayFlags& flags) {
  cmd->add_option("--backoff-max-ms", flags.backoff_max_ms, "Longest wait between failed rounds")
      ->check(IntegerFrom(100, 3'600'000))
      ->capture_default_str();
  cmd->add_option("--claim-partitions-max", flags.claim_partitions_max,
                  "PostgreSQL store (several relays may share it): partitions claimed per round")
      ->check(IntegerFrom(1, 1 << 16))
      ->capture_default_str();
  cmd->add_option("--claim-hold-ms", flags.claim_hold_ms,
                  "PostgreSQL store: a claim held this long without a word to the store is lost "
                  "to another relay (keep it above --publish-timeout-ms)")
      ->check(IntegerFrom(1000, 3'600'000))
      ->capture_default_str();
  cmd->add_option("--once-failures-max", flags.once_failures_max,
                  "Failed rounds in a row after which --once gives up")
      ->check(IntegerFrom(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--park-refused-after", flags.park_refused_after,
                  "Park a row the destination refuses for what it is (larger than the NATS "
                  "server's max_payload or the stream's max_msg_size; a newline for a file) once "
                  "it has this many failed attempts or more, so the rows behind it go out (0: "
                  "never; such a row holds them back)")
      ->check(IntegerFrom(0, 1'000'000))
      ->capture_default_str();
}

}  // namespace

void AddRelayCommand(CLI::App& app, Runner& run) {
  auto flags = std::make_shared<RelayFlags>();
  CLI::App* cmd = app.add_subcommand(
      "relay",
      "Publish the outbox's pending rows, in order and with their exact bytes, to a destination "
      "(--to); a row is marked sent once the destination durably accepted it. Runs until SIGTERM "
      "or SIGINT (then exit 0), or with "
      "--once until nothing is pending (exit 1 when the destination kept failing).");
  cmd->add_option("--store", flags->store, "Store: " + BackendUsages(BackendRole::kStore))
      ->required();
  cmd->add_option("--to", flags->to, BackendUsages(BackendRole::kPublisher))->required();
  cmd->add_option("--stream,--topic", flags->stream,
                  "The broker's stream (JetStream: created when absent) or topic (Kafka)")
      ->capture_default_str();
  cmd->add_option("--broker-config,--kafka-config", flags->broker_config,
                  "KEY=VALUE: a property of the broker's client (NATS: user, password_file, "
                  "token_file, creds, tls.ca, tls.cert, tls.key, tls.hostname; Kafka: "
                  "librdkafka's: TLS, SASL); repeatable");
  cmd->add_option("--subject-prefix", flags->subject_prefix,
                  "Subjects are PREFIX.p<partition>.<type>")
      ->capture_default_str();
  cmd->add_option("--partitions", flags->partitions,
                  "Spread subjects over N partitions (default: the partition of each row)")
      ->check(IntegerFrom(1, 1 << 16));
  cmd->add_flag("--once", flags->once, "Publish what is pending, then exit");
  cmd->add_option("--config", flags->config,
                  "evident.yaml whose `retention:` runs beside the relay (not with --once)")
      ->check(CLI::ExistingFile);
  AddProgressOption(*cmd, flags->progress);
  AddOtlpOption(*cmd, flags->otlp_endpoint);
  cmd->add_option("--keep-sent", flags->keep_sent,
                  "Delete sent rows older than this (7d, 12h; default 7d, or left to --config's "
                  "retention when it retains sent rows)");
  cmd->add_option("--duplicate-window", flags->duplicate_window,
                  "The broker's duplicate window of a stream the relay creates (at least 2m)")
      ->capture_default_str();
  cmd->add_option("--batch-count-max", flags->batch_count_max, "Rows per publish batch")
      ->check(IntegerFrom(1, 100'000))
      ->capture_default_str();
  cmd->add_option("--poll-ms", flags->poll_ms,
                  "How often an idle relay looks for new rows (SQLite; on PostgreSQL an idle relay "
                  "waits for a commit's notification, a second at most)")
      ->check(IntegerFrom(1, 60'000))
      ->capture_default_str();
  AddDurabilityOptions(cmd, *flags);
  cmd->add_option("--in-flight-max", flags->in_flight_max, "Publishes awaiting their PubAck")
      ->check(IntegerFrom(1, 65'536))
      ->capture_default_str();
  cmd->add_option("--publish-timeout-ms", flags->publish_timeout_ms,
                  "How long a batch waits for its PubAcks")
      ->check(IntegerFrom(1, 600'000))
      ->capture_default_str();
  AddFailureOptions(cmd, *flags);
  cmd->callback([cmd, flags, &run] {
    using enum PublisherOption;
    for (const auto& [name, option] : {std::pair{"--stream", kStream},
                                       {"--subject-prefix", kSubjectPrefix},
                                       {"--duplicate-window", kDuplicateWindow},
                                       {"--in-flight-max", kInFlight},
                                       {"--publish-timeout-ms", kPublishTimeout},
                                       {"--broker-config", kProperties},
                                       {"--replicas", kReplicas},
                                       {"--require-replicas", kReplicas}}) {
      if (cmd->count(name) > 0) flags->given.emplace_back(name, option);
    }
    run = [flags] { return RunRelayCommand(*flags); };
  });
}

}  // namespace evident::cli
