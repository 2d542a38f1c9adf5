// `evident effects run|list|show|resolve` and `evident compensations list`: performing external
// effects, seeing their states and recording what a person found at the other side. The work is
// the library's (evident/effects.h); this file parses flags and formats.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/text.h"
#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/effects.h"
#include "evident/store.h"

namespace evident::cli {
namespace {

struct RunFlags {
  std::string config, store, runner_id;
  double until_idle_seconds = -1;
  int64_t claim_margin_ms = EffectRunOptions{}.claim_margin_ms;
  int64_t poll_ms = EffectRunOptions{}.poll_ms;
  bool quiet = false;
  std::string otlp_endpoint;
};

struct ListFlags {
  std::string store, state, consumer, effect, subject;
  std::string format = "text";
  int64_t rows_max = kReadRowsMaxDefault;
};

struct ShowFlags {
  std::string key, store;
  std::string format = "text";
};

struct ResolveFlags {
  std::string key, store, outcome, by, note;
  std::string config;  // optional: the intent's effect's call timeout bounds the in-flight window
  int64_t claim_margin_ms = EffectRunOptions{}.claim_margin_ms;
};

// How long after a claim with no answer its call may still be in flight: the intent's effect's
// timeout plus the runners' claim margin, or, without the configuration, the longest timeout a
// configuration may give plus the margin.
Result<int64_t> InFlightMs(const ResolveFlags& flags, Store& store) {
  if (flags.config.empty()) return kEffectTimeoutMsLimit + flags.claim_margin_ms;
  EVIDENT_ASSIGN_OR_RETURN(const Config config, LoadConfig(flags.config));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
  return CallWindowOfIntent(*snapshot, &config, flags.key, flags.claim_margin_ms);
}

struct CompensationFlags {
  std::string store, consumer, subject;
  std::string format = "text";
  int64_t rows_max = kReadRowsMaxDefault;
};

std::string P(std::string_view text) { return Printable(text); }

std::string IntentText(const EffectIntent& e) {
  if (e.retained) {
    return P(e.key) + "  " + std::string(EffectStateName(e.state)) + "  " + P(e.effect) + "  " +
           P(e.consumer) + "  removed by retention (settled in the second of " +
           rfc3339::FormatMs(e.settled_at_ms.value_or(0)) + "; its key is kept as a digest)\n";
  }
  std::string line = P(e.key) + "  " + std::string(EffectStateName(e.state)) + "  " + P(e.effect) +
                     "  " + P(e.consumer) + "  " + P(e.subject) + "  " +
                     std::to_string(e.attempts) + " attempt(s)";
  if (e.next_attempt_at_ms) {
    line += "  next " + rfc3339::FormatMs(*e.next_attempt_at_ms);
  } else if (!Settled(e.state)) {
    line += "  waits for reconciliation";
  }
  if (!e.last_error.empty()) line += "  last: " + P(e.last_error);
  return line + "\n";
}

int RunEffectsCommand(const RunFlags& flags) {
  auto config = LoadConfig(flags.config);
  auto store = config.ok() ? OpenStore(flags.store, {.create = false})
                           : Result<std::unique_ptr<Store>>(config.status());
  auto transport =
      store.ok() ? NewHttpTransport() : Result<std::unique_ptr<EffectTransport>>(store.status());
  if (!transport.ok()) {
    std::cerr << "evident effects run: " << transport.status().ToString() << "\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<OtlpTracer>> tracer = OpenTracer(flags.otlp_endpoint, &*config);
  if (!tracer.ok()) {
    std::cerr << "evident effects run: " << tracer.status().ToString() << "\n";
    return kExitUsage;
  }
  static CancelToken stop;
  InstallStopSignals(stop);
  EffectRunOptions options;
  options.runner_id = flags.runner_id;
  options.tracer = tracer->get();
  options.cancel = &stop;
  options.claim_margin_ms = flags.claim_margin_ms;
  options.poll_ms = flags.poll_ms;
  options.until_idle_ms =
      flags.until_idle_seconds < 0 ? -1 : static_cast<int64_t>(flags.until_idle_seconds * 1000);
  if (!flags.quiet) {
    options.on_attempt = [](const EffectIntent& after, const AttemptVerdict& verdict) {
      WriteStdout(P(after.key) + "  " + std::string(EffectStateName(after.state)) + "  attempt " +
                  std::to_string(after.attempts) + "  " + P(verdict.detail) + "\n");
    };
    // Not attempted: postponed while the projection lags, withdrawn, or held for a person.
    options.on_basis = [](const EffectIntent& after, EffectAction action) {
      const std::string what = action == EffectAction::kPostpone ? "postponed"
                               : action == EffectAction::kHold   ? "unknown, held"
                                                                 : "withdrawn";
      WriteStdout(P(after.key) + "  " + what + "  " + P(after.last_error) + "\n");
    };
  }
  auto summary = RunEffects(*config, **store, **transport, options);
  CloseTracer(std::move(*tracer), "effects run");
  if (!summary.ok()) {
    std::cerr << "evident effects run: " << summary.status().ToString() << "\n";
    return kExitUsage;
  }
  char line[768];
  std::snprintf(
      line, sizeof line,
      "%lld attempt(s): %lld done, %lld failed, %lld unknown, %lld not sent; %lld "
      "withdrawn, %lld held for a person, %lld postponement(s); %lld answer(s) "
      "superseded, %lld intent(s) of effects not configured here put off%s\n",
      static_cast<long long>(summary->attempts), static_cast<long long>(summary->done),
      static_cast<long long>(summary->failed), static_cast<long long>(summary->unknown),
      static_cast<long long>(summary->not_sent), static_cast<long long>(summary->withdrawn),
      static_cast<long long>(summary->held), static_cast<long long>(summary->postponed),
      static_cast<long long>(summary->superseded), static_cast<long long>(summary->unconfigured),
      summary->stopped ? "; stopped after the call in flight" : "");
  if (!WriteStdout(line)) return kExitUsage;
  if (summary->stopped) return 128 + (LastStopSignal() != 0 ? LastStopSignal() : SIGTERM);
  return kExitOk;
}

Result<std::unique_ptr<Snapshot>> ReadStore(const std::string& uri, std::unique_ptr<Store>& store) {
  EVIDENT_ASSIGN_OR_RETURN(store, OpenStore(uri, {.read_only = true}));
  return store->Read();
}

int RunList(const ListFlags& flags) {
  EffectFilter filter;
  if (!flags.state.empty()) filter.state = ParseEffectState(flags.state);
  if (!flags.consumer.empty()) filter.consumer = flags.consumer;
  if (!flags.effect.empty()) filter.effect = flags.effect;
  if (!flags.subject.empty()) filter.subject = flags.subject;
  std::unique_ptr<Store> store;
  auto snapshot = ReadStore(flags.store, store);
  auto rows = snapshot.ok() ? (*snapshot)->ListIntents(filter, 0, flags.rows_max)
                            : Result<Rows<EffectIntent>>(snapshot.status());
  if (!rows.ok()) {
    std::cerr << "evident effects list: " << rows.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string out;
  for (const EffectIntent& e : rows->rows) {
    if (flags.format == "json") {
      AppendEffectJson(e, nullptr, out);
      out.push_back('\n');
    } else {
      out += IntentText(e);
    }
  }
  if (flags.format == "text" && rows->rows.empty()) out = "no effect intents match\n";
  if (!WriteStdout(out)) return kExitUsage;
  if (rows->truncated) {
    std::cerr << "evident effects list: more than " << flags.rows_max
              << " intents match; the first are shown (--limit)\n";
  }
  return kExitOk;
}

int RunShow(const ShowFlags& flags) {
  std::unique_ptr<Store> store;
  auto snapshot = ReadStore(flags.store, store);
  auto intent = snapshot.ok() ? (*snapshot)->FindIntent(flags.key)
                              : Result<std::optional<EffectIntent>>(snapshot.status());
  auto log = intent.ok() ? (*snapshot)->IntentLogOf(flags.key)
                         : Result<Rows<EffectLogEntry>>(intent.status());
  if (!log.ok()) {
    std::cerr << "evident effects show: " << log.status().ToString() << "\n";
    return kExitUsage;
  }
  if (!*intent) {
    std::cerr << "evident effects show: no effect intent with key " << P(flags.key) << "\n";
    return kExitNegative;
  }
  std::string out;
  if (flags.format == "json") {
    AppendEffectJson(**intent, &log->rows, out);
    out.push_back('\n');
  } else {
    out = IntentText(**intent);
    for (const EffectLogEntry& l : log->rows) {
      out += "  " + rfc3339::FormatMs(l.at_ms) + "  " + std::string(EffectActionName(l.action)) +
             " by " + P(l.by) + " -> " + std::string(EffectStateName(l.state_after)) + "  " +
             P(l.detail) + "\n";
    }
  }
  return WriteStdout(out) ? kExitOk : kExitUsage;
}

int RunResolve(const ResolveFlags& flags) {
  auto store = OpenStore(flags.store, {.create = false});
  if (!store.ok()) {
    std::cerr << "evident effects resolve: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  const Result<int64_t> in_flight_ms = InFlightMs(flags, **store);
  if (!in_flight_ms.ok()) {
    std::cerr << "evident effects resolve: " << in_flight_ms.status().ToString() << "\n";
    return kExitUsage;
  }
  const EffectResolution resolution{.key = flags.key,
                                    .outcome = flags.outcome == "retry"
                                                   ? EffectState::kIntended
                                                   : *ParseEffectState(flags.outcome),
                                    .by = flags.by,
                                    .note = flags.note,
                                    .in_flight_ms = *in_flight_ms};
  auto resolved = ResolveEffect(**store, resolution, SystemClock().NowMs());
  if (!resolved.ok()) {
    std::cerr << "evident effects resolve: " << resolved.status().ToString() << "\n";
    const Code code = resolved.status().code();
    return code == Code::kNotFound || code == Code::kFailedPrecondition ? kExitNegative
                                                                        : kExitUsage;
  }
  return WriteStdout("resolved " + IntentText(*resolved)) ? kExitOk : kExitUsage;
}

int RunCompensations(const CompensationFlags& flags) {
  std::unique_ptr<Store> store;
  auto snapshot = ReadStore(flags.store, store);
  auto rows = snapshot.ok()
                  ? (*snapshot)->ListCompensations(flags.consumer, flags.subject, 0, flags.rows_max)
                  : Result<Rows<CompensationRecord>>(snapshot.status());
  if (!rows.ok()) {
    std::cerr << "evident compensations list: " << rows.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string out;
  for (const CompensationRecord& c : rows->rows) {
    if (flags.format == "json") {
      AppendCompensationJson(c, out);
      out.push_back('\n');
      continue;
    }
    out += P(c.key) + "  " + std::string(CompensationByName(c.recorded_by)) +
           (c.consumer.empty() ? std::string() : " " + P(c.consumer)) + "  " + P(c.subject) +
           "  owner " + P(c.owner_source) +
           (c.owner_version ? " v" + std::to_string(*c.owner_version) : std::string()) +
           (c.decision.empty() ? std::string() : "  decision " + P(c.decision)) +
           (c.event_id.empty() ? std::string() : "  event " + P(c.event_id)) + "  " +
           rfc3339::FormatMs(c.recorded_at_ms) + "  " +
           std::string(CompensationStateName(c.state)) +
           (c.detail.empty() ? std::string() : ": " + P(c.detail)) + "\n";
  }
  if (flags.format == "text" && rows->rows.empty()) out = "no compensations match\n";
  if (!WriteStdout(out)) return kExitUsage;
  if (rows->truncated) {
    std::cerr << "evident compensations list: more than " << flags.rows_max
              << " records match; the first are shown (--limit)\n";
  }
  return kExitOk;
}

void AddRun(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = parent.add_subcommand("run", "Perform the intents that are due, and record.");
  cmd->add_option("--config", flags->config, "evident.yaml (the effects' targets)")->required();
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--until-idle", flags->until_idle_seconds,
                  "End once no intent was due for this many seconds (default: run until "
                  "SIGTERM or SIGINT)")
      ->check(SecondsUpTo(86400.0 * 365));
  cmd->add_option("--runner-id", flags->runner_id, "Name recorded with each claim");
  cmd->add_option("--claim-margin-ms", flags->claim_margin_ms,
                  "How long past its timeout a claim on an idempotent target is this runner's "
                  "before another runner may call it again")
      ->check(IntegerFrom(100, 86'400'000));
  cmd->add_option("--poll-ms", flags->poll_ms, "How often to look for due intents")
      ->check(IntegerFrom(1, 60'000));
  cmd->add_flag("--quiet", flags->quiet, "No line per attempt");
  AddOtlpOption(*cmd, flags->otlp_endpoint);
  cmd->callback([flags, &run] { run = [flags] { return RunEffectsCommand(*flags); }; });
}

void AddList(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<ListFlags>();
  CLI::App* cmd = parent.add_subcommand("list", "Effect intents, in the order they were written.");
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--state", flags->state, "intended, done, failed, unknown or withdrawn")
      ->check(CLI::IsMember({"intended", "done", "failed", "unknown", "withdrawn"}));
  cmd->add_option("--consumer", flags->consumer, "Only this consumer's intents");
  cmd->add_option("--effect", flags->effect, "Only this effect's intents");
  cmd->add_option("--subject", flags->subject, "Only this subject's intents");
  cmd->add_option("--limit", flags->rows_max, "At most this many intents")
      ->check(IntegerFrom(1, 1000000));
  AddFormatOption(*cmd, flags->format);
  cmd->callback([flags, &run] { run = [flags] { return RunList(*flags); }; });
}

void AddShow(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<ShowFlags>();
  CLI::App* cmd = parent.add_subcommand("show", "One intent and its log of attempts.");
  cmd->add_option("key", flags->key, "Intent key")->required();
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  AddFormatOption(*cmd, flags->format);
  cmd->callback([flags, &run] { run = [flags] { return RunShow(*flags); }; });
}

void AddResolve(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<ResolveFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "resolve", "Record what a person found at the other side of an intended or unknown intent.");
  cmd->add_option("key", flags->key, "Intent key")->required();
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--outcome", flags->outcome,
                  "done, failed, or retry (the other side never performed it: call again with "
                  "the same key)")
      ->required()
      ->check(CLI::IsMember({"done", "failed", "retry"}));
  cmd->add_option("--config", flags->config,
                  "evident.yaml: a claim with no answer is taken to be in flight for its effect's "
                  "timeout plus --claim-margin-ms (default without it: the longest timeout, "
                  "600000 ms, plus the margin)");
  cmd->add_option("--claim-margin-ms", flags->claim_margin_ms,
                  "The runners' claim margin (as effects run's)")
      ->check(IntegerFrom(100, 86'400'000));
  cmd->add_option("--by", flags->by, "Who checked (for the log)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& v) { return v.size() <= 256 ? "" : "at most 256 bytes"; }, "TEXT",
          "ByLength"));
  cmd->add_option("--note", flags->note, "What they saw (for the log)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& v) { return v.size() <= 4096 ? "" : "at most 4096 bytes"; }, "TEXT",
          "NoteLength"));
  cmd->callback([flags, &run] { run = [flags] { return RunResolve(*flags); }; });
}

}  // namespace

void AddEffectsCommands(CLI::App& app, Runner& run) {
  CLI::App* cmd = app.add_subcommand("effects", "External effects: perform, list, resolve.");
  cmd->require_subcommand(1);
  AddRun(*cmd, run);
  AddList(*cmd, run);
  AddShow(*cmd, run);
  AddResolve(*cmd, run);

  auto flags = std::make_shared<CompensationFlags>();
  CLI::App* compensations =
      app.add_subcommand("compensations", "The compensations owners' decisions required.");
  compensations->require_subcommand(1);
  CLI::App* list = compensations->add_subcommand("list", "Compensation records, oldest first.");
  list->add_option("--store", flags->store, StoreHelp())->required();
  list->add_option("--consumer", flags->consumer, "Only this consumer's records");
  list->add_option("--subject", flags->subject, "Only this subject's records");
  list->add_option("--limit", flags->rows_max, "At most this many records")
      ->check(IntegerFrom(1, 1000000));
  AddFormatOption(*list, flags->format);
  list->callback([flags, &run] { run = [flags] { return RunCompensations(*flags); }; });
}

}  // namespace evident::cli
