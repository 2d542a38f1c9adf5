// `evident serve`: the daemon (evident/serve.h). Parses flags and prints; the library serves.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "evident/cancel.h"
#include "evident/consumer.h"
#include "evident/registry.h"
#include "evident/retention.h"
#include "evident/serve.h"
#include "evident/stored_consumers.h"
#include "json/files.h"

namespace evident::cli {
namespace {

struct ServeFlags {
  std::string config, store, listen = "127.0.0.1:8080", admin_token_file, otlp_endpoint;
  std::string synchronous = "FULL";
  // Short: a store another process holds is answered 503 (not taken) rather than kept waiting,
  // and a stop is not held up by it for long.
  int64_t busy_timeout_ms = 5'000;
  // A daemon commits as soon as nothing more is queued (the config's linger_ms is for files):
  // requests that arrive while a commit runs share the next one.
  int64_t batch_count_max = 0, linger_ms = 0;
  int64_t body_bytes_max = int64_t{16} << 20;
  int64_t connections_max = 1024, read_timeout_s = 10, header_timeout_s = 10;
  int64_t metrics_interval_ms = 5000;
  std::string from, stream = "EVENTS", durable = "evident-serve", filter;
  std::vector<std::string> broker_config;  // --broker-config KEY=VALUE, repeatable
  bool no_effects = false;
};

Result<std::unique_ptr<Store>> OpenServeStore(const ServeFlags& flags, bool read_only) {
  return OpenStore(flags.store, {.busy_timeout_ms = flags.busy_timeout_ms,
                                 .read_only = read_only,
                                 .synchronous = flags.synchronous});
}

// --from: a broker read beside HTTP. A source that ends (a file) is refused: a daemon's broker
// loop runs until it is stopped.
Status AddBrokerSource(const ServeFlags& flags, ServeOptions& options) {
  const Result<SourceTraits> traits = SourceTraitsOf(flags.from);
  if (!traits.ok()) return Status::InvalidArgument("--from " + traits.status().message());
  if (traits->ends) {
    return Status::InvalidArgument("--from " + RedactUri(flags.from) +
                                   ": serve reads a broker beside HTTP, not an input that ends");
  }
  const SourceOptions source{.stream = flags.stream,
                             .consumer = flags.durable,
                             .filter = flags.filter,
                             .properties = flags.broker_config};
  EVIDENT_RETURN_IF_ERROR(
      CheckSourceOptions(flags.from, source).Annotate("--from " + RedactUri(flags.from)));
  options.broker_resumes = traits->resumes_from_store;
  options.open_broker_source = [from = flags.from, source] { return OpenSource(from, source); };
  options.probe_broker = [from = flags.from, source] { return ProbeSource(from, source); };
  return Status::Ok();
}

// HOST:PORT into the options; false (with the reason printed) when it is not one.
bool ParseListen(const std::string& listen, ServeOptions& options) {
  const size_t colon = listen.rfind(':');
  int64_t port = -1;
  if (colon != std::string::npos) {
    try {
      size_t used = 0;
      port = std::stoll(listen.substr(colon + 1), &used);
      if (used != listen.size() - colon - 1) port = -1;
    } catch (const std::exception&) {
      port = -1;
    }
  }
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
    std::cerr << "evident serve: --listen expects HOST:PORT (e.g. 127.0.0.1:8080), got '" << listen
              << "'\n";
    return false;
  }
  options.host = listen.substr(0, colon);
  options.port = static_cast<int>(port);
  return true;
}

int Fail(const Status& status) {
  std::cerr << "evident serve: " << status.ToString() << "\n";
  return kExitUsage;
}

int RunServe(const ServeFlags& flags) {
  ServeOptions options;
  if (!ParseListen(flags.listen, options)) return kExitUsage;
  auto config = LoadConfig(flags.config);
  if (!config.ok()) return Fail(config.status());
  if (flags.batch_count_max > 0)
    config->batch_count_max = static_cast<size_t>(flags.batch_count_max);
  config->linger_ms = flags.linger_ms;
  if (Status applied = ApplyHttpConfig(config->http, options); !applied.ok()) return Fail(applied);
  if (!flags.admin_token_file.empty()) {
    auto token = ReadFileToString(flags.admin_token_file, 4096);
    if (!token.ok()) return Fail(token.status().Annotate("--admin-token-file"));
    while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) token->pop_back();
    if (token->size() < 16) {
      std::cerr << "evident serve: the admin token in " << flags.admin_token_file
                << " is shorter than 16 characters\n";
      return kExitUsage;
    }
    options.admin_token = *std::move(token);
  }
  auto pipeline = Pipeline::Create(*config);
  if (!pipeline.ok()) return Fail(pipeline.status());
  auto store = OpenServeStore(flags, false);
  if (!store.ok()) return Fail(store.status());
  // Once the store keeps consumers, it decides with its own: a file that differs is refused.
  if (Status same = CheckConfigAgainstStore(**store, flags.config); !same.ok()) return Fail(same);
  options.body_bytes_max = static_cast<size_t>(flags.body_bytes_max);
  options.connections_max = static_cast<unsigned>(flags.connections_max);
  options.read_timeout_s = static_cast<unsigned>(flags.read_timeout_s);
  options.header_ms_max = flags.header_timeout_s * 1000;
  options.metrics_interval_ms = flags.metrics_interval_ms;
  options.open_store = [&flags](bool read_only) { return OpenServeStore(flags, read_only); };
  if (const auto store_traits = StoreTraitsOf(flags.store);
      store_traits.ok() && store_traits->waits_for_locks) {
    options.consume.busy_retry.attempts_max = 1;
  }
  options.log = stderr;
  options.run_effects = !flags.no_effects;
  if (!flags.from.empty()) {
    if (Status added = AddBrokerSource(flags, options); !added.ok()) return Fail(added);
  }
  Result<std::unique_ptr<OtlpTracer>> tracer = OpenTracer(flags.otlp_endpoint, &*config);
  if (!tracer.ok()) return Fail(tracer.status());
  options.consume.tracer = tracer->get();
  static CancelToken stop;
  options.cancel = &stop;
  InstallStopSignals(stop);
  options.on_listening = [&options](int port) {
    std::fprintf(stderr, "evident serve: listening on http://%s:%d\n", options.host.c_str(), port);
    std::fflush(stderr);
  };
  // The configuration's retention runs beside the daemon, on a store of its own.
  std::unique_ptr<RetentionTimer> retention = StartRetention(
      config->retention, [&flags] { return OpenServeStore(flags, false); }, "serve");
  Result<ServeSummary> summary = Serve(**pipeline, **store, options);
  if (retention != nullptr) retention->Stop();
  CloseTracer(std::move(*tracer), "serve");
  if (!summary.ok()) return Fail(summary.status());
  std::fprintf(stderr,
               "evident serve: stopped; %lld requests answered, %lld events decided in %lld "
               "transactions, %lld restarts of the loop\n",
               static_cast<long long>(summary->requests), static_cast<long long>(summary->events),
               static_cast<long long>(summary->consume.batches),
               static_cast<long long>(summary->restarts));
  return kExitOk;
}

// The HTTP intake's bounds and timeouts, and how often /metrics reads the store.
void AddHttpOptions(CLI::App* cmd, ServeFlags& flags) {
  cmd->add_option("--body-bytes-max", flags.body_bytes_max, "Largest request body (413 above)")
      ->check(IntegerFrom(1024, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--connections-max", flags.connections_max, "Open connections at most")
      ->check(IntegerFrom(1, 65536))
      ->capture_default_str();
  cmd->add_option("--read-timeout-s", flags.read_timeout_s, "Close a connection silent this long")
      ->check(IntegerFrom(1, 3600))
      ->capture_default_str();
  cmd->add_option("--header-timeout-s", flags.header_timeout_s,
                  "A new connection must send its request headers within this long, however "
                  "steadily it trickles them (an idle keep-alive one may wait --read-timeout-s)")
      ->check(IntegerFrom(1, 3600))
      ->capture_default_str();
  AddOtlpOption(*cmd, flags.otlp_endpoint);
  cmd->add_option("--metrics-interval-ms", flags.metrics_interval_ms,
                  "Read the store's gauges of /metrics at most this often, off the request thread "
                  "(a scrape serves the last reading)")
      ->check(IntegerFrom(100, 3'600'000))
      ->capture_default_str();
}

}  // namespace

void AddServeCommand(CLI::App& app, Runner& run) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the consumers of a config on CloudEvents received over HTTP (POST /events: "
      "structured, binary and batch mode), with /healthz, /readyz, /metrics and an admin API. "
      "Answers each request once its decisions are committed. SIGTERM/SIGINT: stop accepting, "
      "finish what is in flight, exit 0.");
  cmd->add_option("--config", flags->config, "evident.yaml")->required();
  cmd->add_option("--store", flags->store, "Store: " + BackendUsages(BackendRole::kStore))
      ->required();
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (IPv4; port 0: any free)")
      ->capture_default_str();
  cmd->add_option("--admin-token-file", flags->admin_token_file,
                  "File holding the admin API's bearer token (at least 16 characters); without "
                  "it the admin routes are disabled");
  cmd->add_option("--from", flags->from, "Also consume a broker, beside HTTP: " + BrokerUsages());
  cmd->add_option("--stream,--topic", flags->stream, "The broker's stream or topic (with --from)")
      ->capture_default_str();
  cmd->add_option("--durable", flags->durable,
                  "Durable consumer name, or Kafka group id (with --from)")
      ->capture_default_str();
  cmd->add_option("--filter", flags->filter, "Subject filter, e.g. evident.p3.> (with --from)");
  cmd->add_option("--broker-config,--kafka-config", flags->broker_config,
                  "KEY=VALUE: a property of the broker's client (NATS: user, password_file, "
                  "token_file, creds, tls.ca, tls.cert, tls.key, tls.hostname; Kafka: "
                  "librdkafka's: TLS, SASL); repeatable (with --from)");
  cmd->add_flag("--no-effects", flags->no_effects,
                "Do not perform effect intents here (another `evident effects run` does)");
  cmd->add_option("--batch-count-max", flags->batch_count_max,
                  "Events per transaction (overrides the config)")
      ->check(IntegerFrom(1, kBatchCountMaxLimit));
  cmd->add_option("--linger-ms", flags->linger_ms,
                  "Wait this long for more events before committing (0: commit once nothing "
                  "more is queued; the config's linger_ms is not used)")
      ->check(IntegerFrom(0, kLingerMsLimit))
      ->capture_default_str();
  AddHttpOptions(cmd, *flags);
  cmd->add_option("--busy-timeout-ms", flags->busy_timeout_ms,
                  "How long to wait for a store another process is writing")
      ->check(IntegerFrom(0, 3'600'000))
      ->capture_default_str();
  cmd->add_option("--synchronous", flags->synchronous, "SQLite synchronous: FULL, NORMAL or OFF")
      ->capture_default_str();
  cmd->callback([flags, cmd, &run] {
    std::string clash;
    if (flags->from.empty()) {
      for (const char* only : {"--stream", "--durable", "--filter"}) {
        if (cmd->count(only) > 0) clash = std::string(only) + " needs --from";
      }
    }
    run = [flags, clash] {
      if (!clash.empty()) {
        std::cerr << "evident serve: " << clash << "\n";
        return kExitUsage;
      }
      return RunServe(*flags);
    };
  });
}

}  // namespace evident::cli
