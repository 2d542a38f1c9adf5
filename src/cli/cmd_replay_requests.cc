// `evident replay-requests serve`: the owner's side of a gap's request-replay route
// (evident/replay_requests.h). The work is the library's; this file parses flags and formats.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "evident/cancel.h"
#include "evident/env.h"
#include "evident/registry.h"
#include "evident/replay_requests.h"
#include "evident/store.h"

namespace evident::cli {
namespace {

struct ServeFlags {
  std::string store, input, from, stream, durable = "evident-replay-requests", filter;
  std::string subject_prefix = "evident";
  std::string to, to_stream, to_subject_prefix = "evident";
  std::vector<std::string> owner_sources;
  std::vector<std::string> broker_config, to_broker_config;  // KEY=VALUE, repeatable
  double until_idle_seconds = -1;
  // How long --from may take to open: a server down or a cluster electing a leader meanwhile
  // (-1: --until-idle's time, else a minute).
  int64_t open_wait_ms = -1;
  bool resume = false;
  int64_t rows_max = ReplayServeOptions{}.rows_max;
};

// The requests' source. A broker that is unavailable is waited for up to --open-wait-ms, or until
// `stop`, as consume waits for its own.
Result<std::unique_ptr<Source>> OpenRequests(const ServeFlags& f, const CancelToken& stop) {
  if (!f.from.empty() && !f.input.empty()) {
    return Status::InvalidArgument("--from and --input exclude each other");
  }
  if (f.from.empty()) return OpenNdjsonSource(f.input.empty() ? "-" : f.input);
  const SourceOptions options{.stream = f.stream,
                              .consumer = f.durable,
                              .filter = f.filter,
                              .subject_prefix = f.subject_prefix,
                              .properties = f.broker_config};
  if (SourceTakes(f.from, SourceOption::kStream) && f.stream.empty()) {
    return Status::InvalidArgument("--from " + RedactUri(f.from) + " needs --stream");
  }
  int64_t wait_ms = f.open_wait_ms;
  if (wait_ms < 0) {
    wait_ms = f.until_idle_seconds < 0 ? 60'000 : static_cast<int64_t>(f.until_idle_seconds * 1000);
  }
  Result<std::unique_ptr<Source>> source =
      OpenSourceWaiting(f.from, options, wait_ms, SystemClock(), &stop, stderr);
  if (!source.ok()) return Status(source.status().code(), "--from " + source.status().message());
  return source;
}

Result<PublisherFactory> OpenAnswers(const ServeFlags& f) {
  if (PublisherTakes(f.to, PublisherOption::kStream) && f.to_stream.empty()) {
    return Status::InvalidArgument("--to " + RedactUri(f.to) + " needs --to-stream");
  }
  const PublisherOptions options{.stream = f.to_stream,
                                 .subject_prefix = f.to_subject_prefix,
                                 .properties = f.to_broker_config};
  Result<Destination> destination = ResolvePublisher(f.to, options);
  if (!destination.ok()) return Status::InvalidArgument("--to " + destination.status().message());
  return destination->open;
}

int RunServe(const ServeFlags& flags) {
  static CancelToken stop;
  InstallStopSignals(stop);
  auto source = OpenRequests(flags, stop);
  auto publisher = source.ok() ? OpenAnswers(flags) : Result<PublisherFactory>(source.status());
  auto store = publisher.ok() ? OpenStore(flags.store, {.create = false})
                              : Result<std::unique_ptr<Store>>(publisher.status());
  if (!store.ok()) {
    std::cerr << "evident replay-requests serve: " << store.status().ToString() << "\n";
    if (stop.cancelled() && !source.ok()) {
      return 128 + (LastStopSignal() != 0 ? LastStopSignal() : SIGTERM);
    }
    return !source.ok() && source.status().code() == Code::kUnavailable ? kExitUnacknowledged
                                                                        : kExitUsage;
  }
  ReplayServeOptions options{
      .owner_sources = flags.owner_sources,
      .rows_max = flags.rows_max,
      .until_idle_ms =
          flags.until_idle_seconds < 0 ? -1 : static_cast<int64_t>(flags.until_idle_seconds * 1000),
      .resume = flags.resume,
      .cancel = &stop,
      .log = flags.to == "-" ? stderr : stdout};
  auto summary = ServeReplayRequests(**store, **source, *publisher, options);
  if (!summary.ok()) {
    std::cerr << "evident replay-requests serve: " << summary.status().ToString() << "\n";
    return summary.status().code() == Code::kUnavailable ? kExitUnacknowledged : kExitUsage;
  }
  std::fprintf(flags.to == "-" ? stderr : stdout,
               "%lld request(s): %lld answered with every missing version, %lld with some or all "
               "gone, %lld for other owners, %lld refused; %lld event(s) published again\n",
               static_cast<long long>(summary->requests),
               static_cast<long long>(summary->republished), static_cast<long long>(summary->gone),
               static_cast<long long>(summary->not_ours), static_cast<long long>(summary->refused),
               static_cast<long long>(summary->messages));
  return kExitOk;
}

}  // namespace

void AddReplayRequestsCommands(CLI::App& app, Runner& run) {
  CLI::App* cmd = app.add_subcommand(
      "replay-requests", "The owner's answers to consumers' replay requests (gap routes).");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* serve = cmd->add_subcommand(
      "serve",
      "Read evident.replay.requested events and, for a source this owner serves, publish again "
      "every kept outbox row of the subject from the first missing version on (message id "
      "replay:REQUEST:SEQ), then an evident.replay.answered event naming what was gone.");
  serve->add_option("--store", flags->store, "The owner's store (its outbox)")->required();
  serve
      ->add_option("--owner-source", flags->owner_sources,
                   "A source this owner answers for (repeat for several)")
      ->required();
  serve->add_option("--input", flags->input, "Requests as NDJSON: FILE or - (default)");
  serve->add_option("--from", flags->from, "Requests from a broker: " + BrokerUsages());
  serve->add_option("--stream", flags->stream, "The requests' stream (with --from)");
  serve->add_option("--durable", flags->durable, "Durable consumer name (with --from)");
  serve->add_option("--filter", flags->filter, "Filter subject of the requests (with --from)");
  serve->add_option("--broker-config", flags->broker_config,
                    "KEY=VALUE: a property of the --from broker's client (NATS: credentials and "
                    "TLS; Kafka: librdkafka's); repeatable");
  serve
      ->add_option("--open-wait-ms", flags->open_wait_ms,
                   "How long --from may be unavailable at start (a server down, a cluster "
                   "electing a leader) before exit 3 (default: --until-idle's time, else 60000)")
      ->check(IntegerFrom(0, 3'600'000));
  serve->add_option("--subject-prefix", flags->subject_prefix,
                    "Subject prefix of the requests' stream (with --from)");
  serve
      ->add_option("--to", flags->to, "Where answers go: " + BackendUsages(BackendRole::kPublisher))
      ->required();
  serve->add_option("--to-stream", flags->to_stream, "The consumers' stream (with a --to broker)");
  serve->add_option("--to-broker-config", flags->to_broker_config,
                    "KEY=VALUE: a property of the --to broker's client, as --broker-config; "
                    "repeatable");
  serve->add_option("--to-subject-prefix", flags->to_subject_prefix,
                    "Subject prefix of the consumers' stream");
  serve
      ->add_option("--until-idle", flags->until_idle_seconds,
                   "End once no request came for this many seconds (default: until SIGTERM)")
      ->check(SecondsUpTo(86400.0 * 365));
  serve->add_flag("--resume", flags->resume,
                  "Skip the requests of --input an earlier run answered (the store keeps where "
                  "it ended)");
  serve->add_option("--rows-max", flags->rows_max, "Outbox rows published again per request")
      ->check(IntegerFrom(1, 1'000'000));
  serve->callback([flags, &run] { run = [flags] { return RunServe(*flags); }; });
}

}  // namespace evident::cli
