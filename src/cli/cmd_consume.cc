// `evident consume`: run the consumers of a config file over NDJSON input against a store.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "core/join.h"
#include "evident/cancel.h"
#include "evident/consumer.h"
#include "evident/group.h"
#include "evident/registry.h"
#include "evident/retention.h"
#include "evident/stored_consumers.h"

namespace evident::cli {
namespace {

struct ConsumeFlags {
  std::string config;
  std::string store;
  std::string input = "-";
  std::string progress = "auto";
  std::string otlp_endpoint;
  std::string from, stream = "EVENTS", durable = "evident", filter, until_idle;
  int64_t until_idle_ms = -1;  // --until-idle as parsed once (-1: not given)
  std::string subject_prefix = "evident";
  int64_t ack_wait_ms = 30'000;
  // How long --from may take to open: a server down or a cluster electing a leader meanwhile
  // (-1: --until-idle's time, else a minute).
  int64_t open_wait_ms = -1;
  std::vector<std::string> broker_config;  // --broker-config KEY=VALUE, repeatable
  // --group: this process is a member of a consumer group (group.h).
  std::string group, member;
  int64_t partitions = 0;
  int64_t lease_ms = 10'000;
  std::string clash;  // flags that do not fit together: the run only reports it
  std::string profile, profile_file;
  std::string outcomes;
  bool resume = false;
  int64_t batch_count_max = 0;
  int64_t linger_ms = -1;
  int64_t batch_ms_max = -1;
  std::string synchronous = "FULL";
  // Another consume may hold the store's write lock for a whole batch, up to its linger_ms (at
  // most 60 s) and the time to decide it: by default wait that long before giving up.
  int64_t busy_timeout_ms = 75'000;
};

void PrintSummary(std::FILE* out, const ConsumeSummary& summary) {
  std::fprintf(out, "%lld events in %.2f s (%.0f events/s), %lld transactions",
               static_cast<long long>(summary.events), summary.seconds,
               summary.seconds > 0 ? static_cast<double>(summary.events) / summary.seconds : 0.0,
               static_cast<long long>(summary.batches));
  if (summary.skipped > 0) {
    std::fprintf(out, ", %lld events skipped (already committed)",
                 static_cast<long long>(summary.skipped));
  }
  std::fprintf(out, "\n\n%-20s", "consumer");
  for (int i = 0; i < kOutcomeCount; ++i) {
    const std::string_view name = OutcomeName(static_cast<Outcome>(i));
    std::fprintf(out, " %*.*s", static_cast<int>(std::max<size_t>(name.size(), 7)),
                 static_cast<int>(name.size()), name.data());
  }
  std::fputc('\n', out);
  for (const auto& [consumer, counts] : summary.counts) {
    std::fprintf(out, "%-20s", consumer.empty() ? "(none)" : consumer.c_str());
    for (int i = 0; i < kOutcomeCount; ++i) {
      const size_t width = std::max<size_t>(OutcomeName(static_cast<Outcome>(i)).size(), 7);
      std::fprintf(out, " %*lld", static_cast<int>(width), static_cast<long long>(counts[i]));
    }
    std::fputc('\n', out);
  }
  const GapCheck& g = summary.gap_actions;
  if (g.requested + g.manual + g.reported + g.closed > 0) {
    std::fprintf(out,
                 "\ngaps past their deadline: %lld replay request(s) to the outbox, %lld opened "
                 "for a person, %lld reported; %lld closed since\n",
                 static_cast<long long>(g.requested), static_cast<long long>(g.manual),
                 static_cast<long long>(g.reported), static_cast<long long>(g.closed));
  }
}

// What a run recovered from, on standard error: a failed gap deadline check, acknowledgements
// the broker did not confirm, a broker unreachable for the whole idle bound. Returns whether
// acknowledgements are unconfirmed (the exit status says so).
bool ReportRecovered(const ConsumeSummary& summary) {
  if (!summary.gap_check_error.empty()) {
    std::cerr << "evident consume: a gap deadline check failed (the decisions are committed; "
                 "`evident gaps check` runs it again): "
              << summary.gap_check_error << "\n";
  }
  // Ended because the source could not be reached: its acknowledgements could not be
  // confirmed either, which the one message says.
  if (!summary.unreachable_error.empty()) {
    std::cerr << "evident consume: every decision above is committed, but the run ended because "
              << summary.unreachable_error
              << "; nor could it confirm the acknowledgements (the messages of any that did not "
                 "reach the broker come again, answered duplicate); run it again once the "
                 "source answers\n";
  } else if (!summary.acknowledgement_error.empty()) {
    std::cerr << "evident consume: every decision above is committed, but the broker did not "
                 "confirm every acknowledgement: "
              << summary.acknowledgement_error << "\n";
  }
  return !summary.acknowledgement_error.empty() || !summary.unreachable_error.empty();
}

// Opening --outcomes truncates it, so it must not name a file this run reads or writes: the
// store (with its -wal and -shm), the input, the config, the profile file and anything in the
// contracts directory. Empty when the path is safe.
std::string OutcomesClash(const ConsumeFlags& flags, const Config& config) {
  ReadPaths reads;
  AddConfigReads(config, reads);
  AddStoreReads(flags.store, reads);
  if (flags.from.empty() && flags.input != "-") reads.emplace_back(flags.input, "the input");
  if (!flags.profile_file.empty()) reads.emplace_back(flags.profile_file, "the profile file");
  return OutputClash("--outcomes", flags.outcomes, reads);
}

Result<std::unique_ptr<Store>> OpenConsumeStore(const ConsumeFlags& flags) {
  return OpenStore(flags.store,
                   {.busy_timeout_ms = flags.busy_timeout_ms, .synchronous = flags.synchronous});
}

SourceOptions ConsumeSourceOptions(const ConsumeFlags& flags) {
  return {.stream = flags.stream,
          .consumer = flags.durable,
          .filter = flags.filter,
          .subject_prefix = flags.subject_prefix,
          .ack_wait_ms = flags.ack_wait_ms,
          .properties = flags.broker_config};
}

// --from URI: the source it names (registry.h); null without --from. A file reads events up to
// the config's event_bytes_max, as --input does. A broker that is unavailable is waited for up
// to --open-wait-ms, or until `stop`.
Result<std::unique_ptr<Source>> OpenConsumeSource(const ConsumeFlags& flags, const Config& config,
                                                  const CancelToken& stop) {
  if (flags.from.empty()) return std::unique_ptr<Source>();
  SourceOptions options = ConsumeSourceOptions(flags);
  options.event_bytes_max = static_cast<size_t>(config.event_bytes_max);
  int64_t wait_ms = flags.open_wait_ms;
  if (wait_ms < 0) {
    wait_ms = flags.until_idle_ms < 0 ? 60'000 : flags.until_idle_ms;
  }
  Result<std::unique_ptr<Source>> source =
      OpenSourceWaiting(flags.from, options, wait_ms, SystemClock(), &stop, stderr);
  if (!source.ok()) return Status(source.status().code(), "--from " + source.status().message());
  return source;
}

// The source's options given on the command line that the source --from names does not read:
// refused rather than ignored.
std::string UnreadSourceOptions(const ConsumeFlags& flags, const CLI::App& cmd) {
  using enum SourceOption;
  std::vector<std::string> unread;
  for (const auto& [name, option] : {std::pair{"--stream", kStream},
                                     {"--durable", kConsumer},
                                     {"--filter", kFilter},
                                     {"--subject-prefix", kSubjectPrefix},
                                     {"--ack-wait-ms", kAckWait},
                                     {"--broker-config", kProperties}}) {
    if (cmd.count(name) > 0 && !SourceTakes(flags.from, option)) unread.emplace_back(name);
  }
  if (unread.empty() || !SourceTraitsOf(flags.from).ok()) return "";  // an unknown --from: later
  return Join(unread) + (unread.size() == 1 ? ": not an option" : ": not options") +
         " of the source --from " + RedactUri(flags.from);
}

// Whether --group can run on the store; empty when it can. Refused before the store is opened
// (which would create it).
std::string GroupStoreClash(const ConsumeFlags& flags) {
  const Result<StoreTraits> store = StoreTraitsOf(flags.store);
  if (!store.ok() || store->shared_by_processes) return "";  // an unknown store: at its opening
  return "--group needs a store that several processes share; " + flags.store + " is one process's";
}

// Checks the flags that depend on each other; empty when they fit.
std::string FlagsClash(const ConsumeFlags& flags, const CLI::App& cmd) {
  if (!flags.from.empty() && cmd.count("--input") > 0)
    return "--from and --input exclude each other";
  if (flags.from.empty()) {
    for (const char* only : {"--stream", "--durable", "--filter", "--subject-prefix",
                             "--ack-wait-ms", "--broker-config", "--group"}) {
      if (cmd.count(only) > 0) return std::string(only) + " needs --from";
    }
  }
  if (cmd.count("--filter") > 0 && cmd.count("--subject-prefix") > 0) {
    return "--filter and --subject-prefix exclude each other (the filter names the subjects)";
  }
  if (flags.group.empty()) {
    for (const char* only : {"--partitions", "--lease-ms", "--member"}) {
      if (cmd.count(only) > 0) return std::string(only) + " needs --group";
    }
  } else {
    for (const char* other : {"--durable", "--filter", "--resume", "--until-idle"}) {
      if (cmd.count(other) > 0) {
        return std::string(other) +
               " does not fit --group (each partition has its own consumer "
               "and starts from its stored position)";
      }
    }
    const Result<SourceTraits> source = SourceTraitsOf(flags.from);
    if (source.ok() && source->group == GroupPartitions::kAssignedByBroker) {
      // The broker assigns the topic's own partitions; one process on a store of its own may
      // be a member too (a group of one, or one beside members on other stores' topics).
      if (cmd.count("--partitions") > 0) {
        return "--partitions does not fit --group over " + RedactUri(flags.from) +
               " (its broker assigns the topic's own partitions)";
      }
    } else {
      if (cmd.count("--partitions") == 0) return "--group needs --partitions (the relay's)";
      if (std::string clash = GroupStoreClash(flags); !clash.empty()) return clash;
    }
  }
  if (std::string unread = UnreadSourceOptions(flags, cmd); !unread.empty()) return unread;
  if (cmd.count("--profile") > 0 && cmd.count("--profile-file") > 0)
    return "--profile and --profile-file exclude each other";
  return "";
}

// Where --outcomes goes: a file (through the posix Env) or standard output ("-": the summary then
// goes to standard error).
struct Outcomes {
  std::unique_ptr<WritableFile> file;  // null without --outcomes
};

// Closes a --outcomes file and reports a failed run: kExitOk when the run succeeded and its
// outcomes are written, so that its summary may follow.
int CloseOutcomes(const ConsumeFlags& flags, Outcomes& outcomes, const Status& run) {
  const Status closed = outcomes.file != nullptr ? outcomes.file->Close() : Status::Ok();
  if (!closed.ok() && run.ok()) {
    std::cerr << "evident consume: cannot write " << flags.outcomes << ": " << closed.message()
              << " (the decisions are committed)\n";
    return kExitUsage;
  }
  if (!run.ok()) {
    std::cerr << "evident consume: " << run.ToString() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

// --group: runs this process as a member of the group until SIGTERM or SIGINT.
int RunGroupMember(const ConsumeFlags& flags, const Config& config, Outcomes& outcomes,
                   Tracer* tracer) {
  // Field by field: GCC 12 warns of an uninitialised string in the nested designated form.
  GroupOptions options;
  options.store = flags.store;
  options.store_options.busy_timeout_ms = flags.busy_timeout_ms;
  options.group = flags.group;
  options.member = flags.member;
  options.partition_count = flags.partitions;
  options.lease_ms = flags.lease_ms;
  options.from = flags.from;
  options.source = ConsumeSourceOptions(flags);
  options.consume.outcomes = outcomes.file.get();
  options.consume.tracer = tracer;
  static CancelToken stop;
  options.cancel = &stop;
  InstallStopSignals(stop);
  Result<GroupSummary> summary = RunGroup(config, options);
  if (const int failed = CloseOutcomes(flags, outcomes, summary.status()); failed != kExitOk) {
    return failed;
  }
  std::FILE* out = flags.outcomes == "-" ? stderr : stdout;
  std::fprintf(out,
               "member %s of group %s: %lld partition leases taken, %lld given up (for balance, or "
               "revoked by the broker), "
               "%lld lost to another member\n",
               summary->member.c_str(), flags.group.c_str(),
               static_cast<long long>(summary->partitions_taken),
               static_cast<long long>(summary->partitions_given_up),
               static_cast<long long>(summary->leases_lost));
  PrintSummary(out, summary->total);
  const bool unacknowledged = ReportRecovered(summary->total);
  if (!summary->last_error.empty()) {
    std::cerr << "evident consume: a partition's loop ended on an error and was taken up again "
                 "(every decision above is committed); the last: "
              << summary->last_error << "\n";
  }
  return unacknowledged ? kExitUnacknowledged : kExitOk;
}

// The config with the flags' overrides; false (said on standard error) when it cannot be.
bool LoadConsumeConfig(const ConsumeFlags& flags, Config& out) {
  auto config = LoadConfig(flags.config);
  if (!config.ok()) {
    std::cerr << "evident consume: " << config.status().ToString() << "\n";
    return false;
  }
  if (!flags.profile.empty() || !flags.profile_file.empty()) {
    auto profile = flags.profile_file.empty() ? Profile::Named(flags.profile)
                                              : LoadProfileFile(flags.profile_file);
    if (!profile.ok()) {
      std::cerr << "evident consume: " << profile.status().ToString() << "\n";
      return false;
    }
    config->profile = std::move(profile).value();
  }
  if (!flags.outcomes.empty() && flags.outcomes != "-") {
    if (const std::string clash = OutcomesClash(flags, *config); !clash.empty()) {
      std::cerr << "evident consume: " << clash << "\n";
      return false;
    }
  }
  if (flags.batch_count_max > 0)
    config->batch_count_max = static_cast<size_t>(flags.batch_count_max);
  if (flags.linger_ms >= 0) config->linger_ms = flags.linger_ms;
  if (flags.batch_ms_max > 0) config->batch_ms_max = flags.batch_ms_max;
  out = *std::move(config);
  return true;
}

// Opens --outcomes into `out` (no file without it); false (said) when it cannot be written.
bool OpenOutcomes(const ConsumeFlags& flags, Outcomes& out) {
  if (flags.outcomes.empty()) return true;
  // A resumed run, and a group member run again, add to the outcomes of the runs before it.
  Result<std::unique_ptr<WritableFile>> opened =
      OpenOutputFile(flags.outcomes, flags.resume || !flags.group.empty());
  if (!opened.ok()) {
    std::cerr << "evident consume: cannot write " << flags.outcomes << ": "
              << opened.status().message() << "\n";
    return false;
  }
  out.file = std::move(opened).value();
  return true;
}

// One run over --input or the source --from names, until its end, idle time or a stop signal;
// its summary, and the exit code.
int RunOnce(const ConsumeFlags& flags, Pipeline& pipeline, Store& store, Outcomes& outcomes,
            Tracer* tracer) {
  // SIGTERM and SIGINT end the run cleanly after its current commit (or the wait for --from to
  // open); a second one kills.
  static CancelToken stop;
  InstallStopSignals(stop);
  Result<std::unique_ptr<Source>> source = OpenConsumeSource(flags, pipeline.config(), stop);
  if (!source.ok()) {
    std::cerr << "evident consume: " << source.status().ToString() << "\n";
    if (stop.cancelled()) return 128 + (LastStopSignal() != 0 ? LastStopSignal() : SIGTERM);
    // A broker still unreachable after --open-wait-ms: not a usage error.
    return source.status().code() == Code::kUnavailable ? kExitUnacknowledged : kExitUsage;
  }
  if (flags.from.empty()) NoteTerminalInput(flags.input, "consume");
  // A source whose position lives in the store alone (Kafka) always begins there.
  const Result<SourceTraits> traits = SourceTraitsOf(flags.from);
  const bool from_store = !flags.from.empty() && traits.ok() && traits->resumes_from_store;
  ConsumeOptions options{.input = flags.input,
                         .resume = flags.resume || from_store,
                         .outcomes = outcomes.file.get(),
                         .progress = ProgressFile(flags.progress)};
  options.tracer = tracer;
  options.cancel = &stop;
  // SQLite's busy handler already waits for the lock, backing off, up to --busy-timeout-ms: the
  // user's bound is the whole wait, so the loop does not multiply it with retries of its own.
  if (const auto store_traits = StoreTraitsOf(flags.store);
      store_traits.ok() && store_traits->waits_for_locks) {
    options.busy_retry.attempts_max = 1;
  }
  if (flags.until_idle_ms >= 0) options.until_idle_ms = flags.until_idle_ms;
  auto summary = *source != nullptr ? Consume(pipeline, store, **source, options)
                                    : Consume(pipeline, store, options);
  if (const int failed = CloseOutcomes(flags, outcomes, summary.status()); failed != kExitOk) {
    return failed;
  }
  PrintSummary(flags.outcomes == "-" ? stderr : stdout, *summary);
  const bool unacknowledged = ReportRecovered(*summary);
  if (summary->stopped) {
    const int signo = LastStopSignal() != 0 ? LastStopSignal() : SIGTERM;
    std::cerr << "evident consume: stopped by " << (signo == SIGINT ? "SIGINT" : "SIGTERM")
              << " after its last commit; every decision above is committed, and --resume "
                 "continues from there\n";
    return 128 + signo;
  }
  return unacknowledged ? kExitUnacknowledged : kExitOk;
}

int RunConsume(const ConsumeFlags& flags) {
  if (!flags.clash.empty()) {
    std::cerr << "evident consume: " << flags.clash << "\n";
    return kExitUsage;
  }
  Config config;
  if (!LoadConsumeConfig(flags, config)) return kExitUsage;
  auto pipeline = Pipeline::Create(config);
  if (!pipeline.ok()) {
    std::cerr << "evident consume: " << pipeline.status().ToString() << "\n";
    return kExitUsage;
  }
  // A group member opens its own connections (group.h).
  auto store = flags.group.empty() ? OpenConsumeStore(flags)
                                   : Result<std::unique_ptr<Store>>(std::unique_ptr<Store>());
  if (!store.ok()) {
    std::cerr << "evident consume: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  // Once the store keeps consumers, it decides with its own: a file that differs is refused.
  const Status same = *store != nullptr ? CheckConfigAgainstStore(**store, flags.config) : [&] {
    // A group member opens its own connections (and says why it cannot): this one only reads,
    // and is closed again.
    Result<std::unique_ptr<Store>> view = OpenConsumeStore(flags);
    return view.ok() ? CheckConfigAgainstStore(**view, flags.config) : Status::Ok();
  }();
  if (!same.ok()) {
    std::cerr << "evident consume: " << same.ToString() << "\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<OtlpTracer>> tracer = OpenTracer(flags.otlp_endpoint, &config);
  if (!tracer.ok()) {
    std::cerr << "evident consume: " << tracer.status().ToString() << "\n";
    return kExitUsage;
  }
  Outcomes outcomes;
  if (!OpenOutcomes(flags, outcomes)) return kExitUsage;
  // The configuration's retention runs beside the consumers, on a store of its own.
  const std::unique_ptr<RetentionTimer> retention = StartRetention(
      config.retention, [&flags] { return OpenConsumeStore(flags); }, "consume");
  const int code = !flags.group.empty()
                       ? RunGroupMember(flags, config, outcomes, tracer->get())
                       : RunOnce(flags, **pipeline, **store, outcomes, tracer->get());
  if (retention != nullptr) retention->Stop();
  CloseTracer(std::move(*tracer), "consume");
  return code;
}

// --from and the options of the source it names.
void AddSourceOptions(CLI::App* cmd, ConsumeFlags& flags) {
  cmd->add_option("--from", flags.from,
                  "Consume a source instead of --input: " + BackendUsages(BackendRole::kSource));
  cmd->add_option("--stream,--topic", flags.stream, "The broker's stream or topic (with --from)")
      ->capture_default_str();
  cmd->add_option("--durable", flags.durable,
                  "Durable consumer name, or Kafka group id (with --from)")
      ->capture_default_str();
  cmd->add_option("--broker-config,--kafka-config", flags.broker_config,
                  "KEY=VALUE: a property of the broker's client (NATS: user, password_file, "
                  "token_file, creds, tls.ca, tls.cert, tls.key, tls.hostname; Kafka: "
                  "librdkafka's: TLS, SASL); repeatable (with --from)");
  cmd->add_option("--filter", flags.filter, "Subject filter, e.g. evident.p3.> (with --from)");
  cmd->add_option("--subject-prefix", flags.subject_prefix,
                  "The relay's --subject-prefix: reads PREFIX.> (with --from; with --group, "
                  "each partition's PREFIX.p<N>.>, default evident). Without it and --filter, "
                  "a consumer reads every subject of the stream");
  cmd->add_option("--open-wait-ms", flags.open_wait_ms,
                  "How long --from may take to open while its broker is unavailable (a server "
                  "down, a cluster electing a leader) before exit 3 (default: --until-idle's "
                  "time, else 60000)")
      ->check(IntegerFrom(0, 3'600'000));
  cmd->add_option("--ack-wait-ms", flags.ack_wait_ms,
                  "Redelivery after this long unacknowledged (with --from; a new durable only)")
      ->check(IntegerFrom(1000, 3'600'000))
      ->capture_default_str();
}

// --group and its lease.
void AddGroupOptions(CLI::App* cmd, ConsumeFlags& flags) {
  cmd->add_option("--group", flags.group,
                  "Consumer group: processes of one group share the stream's partitions, through "
                  "leases in a postgresql:// store (JetStream) or assigned by the broker (Kafka's "
                  "group protocol, on PostgreSQL or SQLite), every batch fenced in the store");
  cmd->add_option("--partitions", flags.partitions,
                  "The stream's partitions, as the relay's --partitions (with --group over "
                  "JetStream)")
      ->check(IntegerFrom(1, 1 << 16));
  cmd->add_option("--lease-ms", flags.lease_ms,
                  "A partition's lease lasts this long without renewal (with --group; Kafka: "
                  "the member's session timeout)")
      ->check(IntegerFrom(100, 3'600'000))
      ->capture_default_str();
  cmd->add_option("--member", flags.member,
                  "This process's name in the group (default: host-pid-random; unique per run)");
}

// How batches close, and the store's waits and durability.
void AddBatchOptions(CLI::App* cmd, ConsumeFlags& flags) {
  cmd->add_option("--batch-count-max", flags.batch_count_max,
                  "Events per transaction (overrides the config)")
      ->check(IntegerFrom(1, kBatchCountMaxLimit));
  cmd->add_option("--linger-ms", flags.linger_ms,
                  "Commit a partial batch after this pause (overrides the config)")
      ->check(IntegerFrom(0, kLingerMsLimit));
  cmd->add_option("--batch-ms-max", flags.batch_ms_max,
                  "Commit a batch at the latest this long after its first event (overrides the "
                  "config)")
      ->check(IntegerFrom(1, kBatchMsMaxLimit));
  cmd->add_option("--busy-timeout-ms", flags.busy_timeout_ms,
                  "How long to wait for a store another process is writing")
      ->check(IntegerFrom(0, 3'600'000))
      ->capture_default_str();
  cmd->add_option("--synchronous", flags.synchronous, "SQLite synchronous: FULL, NORMAL or OFF")
      ->capture_default_str();
}

}  // namespace

void AddConsumeCommand(CLI::App& app, Runner& run) {
  auto flags = std::make_shared<ConsumeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "consume",
      "Run the consumers of a config file over NDJSON events against a store. Each batch is one "
      "transaction; outcomes are written (and the input checkpoint advanced) after it commits.");
  cmd->add_option("--config", flags->config, "evident.yaml")->required();
  cmd->add_option("--store", flags->store, "Store: " + BackendUsages(BackendRole::kStore))
      ->required();
  cmd->add_option("--input", flags->input, "NDJSON input file, or - for standard input")
      ->capture_default_str();
  AddSourceOptions(cmd, *flags);
  AddGroupOptions(cmd, *flags);
  cmd->add_option("--until-idle", flags->until_idle,
                  "End the run (exit 0) once nothing arrived for this long: 10 (seconds), "
                  "500ms; time a broker is unreachable does not count, and an outage as long "
                  "ends the run with exit 3")
      ->check([](const std::string& v) {
        const Result<int64_t> ms = ParseDurationMs(v);
        return ms.ok() ? std::string() : ms.status().message();
      })
      ->each([flags](const std::string& v) { flags->until_idle_ms = ParseDurationMs(v).value(); });
  cmd->add_option("--profile", flags->profile,
                  "Envelope profile: cloudevents, flat or contract (overrides the config)");
  cmd->add_option("--profile-file", flags->profile_file,
                  "Envelope profile from a JSON file (overrides the config)");
  cmd->add_option("--outcomes", flags->outcomes, "Write one NDJSON line per decision (FILE or -)");
  AddProgressOption(*cmd, flags->progress);
  AddOtlpOption(*cmd, flags->otlp_endpoint);
  cmd->add_flag("--resume", flags->resume,
                "Skip the events of the input an earlier run already committed");
  AddBatchOptions(cmd, *flags);
  cmd->callback([flags, cmd, &run] {
    flags->clash = FlagsClash(*flags, *cmd);
    // Neither --filter nor --subject-prefix: a lone consumer reads every subject of the stream
    // (a group's partitions are the relay's PREFIX.p<N>.>, so it keeps the default prefix).
    if (cmd->count("--filter") == 0 && cmd->count("--subject-prefix") == 0 &&
        flags->group.empty()) {
      flags->subject_prefix.clear();
    }
    run = [flags] { return RunConsume(*flags); };
  });
}

}  // namespace evident::cli
