// `evident evidence`, `evident gaps`, `evident guard`: reading decisions back from the store.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/text.h"
#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/consumer.h"
#include "evident/effects.h"
#include "evident/evidence.h"
#include "evident/gaps.h"
#include "evident/stored_consumers.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

std::string P(std::string_view text) { return Printable(text); }

std::string FormatTime(int64_t ms) { return rfc3339::FormatMs(ms); }

// What the route of a gap did at its deadline: "replay requested at T (id)", ...; empty while
// the deadline has not been acted on.
std::string GapActText(const GapRecord& g) {
  if (!g.acted_at_ms) return {};
  const std::string at = FormatTime(*g.acted_at_ms);
  switch (g.route) {
    case GapRoute::kRequestReplay:
      return "replay requested at " + at + " (" + P(g.request_event_id) + ")" +
             (g.answer.empty() ? "" : ", answered: " + P(g.answer));
    case GapRoute::kManual:
      return "opened for a person at " + at;
    case GapRoute::kWait:
      return "reported past its deadline at " + at;
  }
  return {};
}

// A gap's history as text: "v2 missing (v3 waited), opened T, deadline T; ...; closed at T:
// drained (out-of-order)".
std::string GapRecordText(const GapRecord& g) {
  std::string waiting;
  for (const int64_t v : g.waiting_versions) {
    waiting += (waiting.empty() ? "v" : ", v") + std::to_string(v);
  }
  std::string text =
      "v" + std::to_string(g.expected_version) +
      (g.missing_to > g.expected_version ? "-v" + std::to_string(g.missing_to) : "") + " missing" +
      (waiting.empty() ? "" : " (" + waiting + " waited)") +
      (g.opened_at_ms ? ", opened " + FormatTime(*g.opened_at_ms) : "") + ", deadline " +
      FormatTime(g.deadline_at_ms);
  if (const std::string act = GapActText(g); !act.empty()) text += "; " + act;
  if (g.closed_at_ms) {
    text += "; closed at " + FormatTime(*g.closed_at_ms) +
            (g.closed_by == "arrival" ? "" : " by " + P(g.closed_by)) +
            (g.note.empty() ? "" : " (" + P(g.note) + ")") + ": " +
            std::string(GapClosedHowName(g.how)) +
            (g.cause == GapCause::kUnknown ? "" : " (" + std::string(GapCauseName(g.cause)) + ")");
  } else {
    text += "; open";
  }
  return text;
}

struct EvidenceFlags {
  std::string subject;
  std::string store;
  std::string consumer;
  std::string format = "text";
};

// One quarantine record and its audit, as text.
void PrintQuarantined(const QuarantinedInput& q, const char* label) {
  const QuarantineRecord& k = q.record;
  std::printf("%s #%lld %s %s:%s reason %s, %lld attempt(s), %s: %s\n", label,
              static_cast<long long>(k.id), std::string(OutcomeName(k.outcome)).c_str(),
              P(k.source).c_str(), P(k.event_id).c_str(), P(k.reason).c_str(),
              static_cast<long long>(k.attempts),
              std::string(QuarantineStatusName(k.status)).c_str(), P(k.message).c_str());
  for (const QuarantineAudit& a : q.audit) {
    std::printf("      %s by %s at %s: %s%s%s; note: %s\n",
                std::string(QuarantineActionName(a.action)).c_str(), P(a.by).c_str(),
                FormatTime(a.at_ms).c_str(), P(a.outcome).c_str(),
                a.reason.empty() ? "" : (" (" + P(a.reason) + ")").c_str(),
                (", now " + std::string(QuarantineStatusName(a.status_after))).c_str(),
                P(a.note).c_str());
  }
}

// A consumer's projection and its applied receipts.
void WriteProjectionText(const ConsumerEvidence& c) {
  if (c.projection) {
    const Projection& p = *c.projection;
    const bool in_sync = c.in_sync();
    std::printf("  owner            %s\n", P(p.owner_source).c_str());
    std::printf("  owner version    %lld (highest seen, deferred included)\n",
                static_cast<long long>(p.owner_version_seen));
    std::printf("  projection       version %lld, state '%s', %s\n",
                static_cast<long long>(p.version), P(p.state).c_str(),
                in_sync ? "in sync" : "NOT in sync");
    std::printf("  fields           %s\n", PrintableJson(p.fields_json).c_str());
  } else {
    std::printf("  no projection\n");
  }
  for (const LedgerEntry& e : c.ledger) {
    if (e.state != LedgerState::kApplied) continue;
    std::printf("  applied   v%-4s %s:%s (%s) schema v%lld -> result v%lld, projection v%s, %s%s\n",
                e.subject_version ? std::to_string(*e.subject_version).c_str() : "-",
                P(e.source).c_str(), P(e.event_id).c_str(), P(e.type).c_str(),
                static_cast<long long>(e.input_schema_version),
                static_cast<long long>(e.result_version),
                e.projection_version ? std::to_string(*e.projection_version).c_str() : "-",
                FormatTime(e.committed_at_ms).c_str(),
                e.duplicates > 0
                    ? (", " + std::to_string(e.duplicates) + " duplicate(s) suppressed").c_str()
                    : "");
    if (!e.adapter.empty())
      std::printf("            read through adapter %s\n", P(e.adapter).c_str());
    if (!e.wrote_json.empty()) {
      std::printf("            wrote %s\n", PrintableJson(e.wrote_json).c_str());
    }
    if (!e.traceparent.empty()) {
      std::printf("            trace %s%s%s\n", P(e.traceparent).c_str(),
                  e.tracestate.empty() ? "" : " state ", P(e.tracestate).c_str());
    }
  }
}

// What else the store holds for a consumer and the subject: deferred events, duplicates,
// quarantine, conflicts, gaps, corrections, evidence, effects and compensations.
void WriteRecordsText(const ConsumerEvidence& c, int64_t now_ms) {
  for (const DeferredEvent& d : c.deferred) {
    std::printf("  deferred  v%-4lld %s:%s waits for v%lld, age %llds, deadline %s%s, route %s\n",
                static_cast<long long>(d.subject_version), P(d.source).c_str(),
                P(d.event_id).c_str(), static_cast<long long>(ExpectedVersion(c.projection)),
                static_cast<long long>((now_ms - d.received_at_ms) / 1000),
                FormatTime(d.deadline_at_ms).c_str(), now_ms > d.deadline_at_ms ? " (OVERDUE)" : "",
                std::string(GapRouteName(d.route)).c_str());
  }
  for (const JournalEntry& j : c.journal) {
    if (j.outcome != Outcome::kDuplicate) continue;
    std::printf("  duplicate       %s:%s delivered again at %s, no effect\n", P(j.source).c_str(),
                P(j.event_id).c_str(), FormatTime(j.at_ms).c_str());
  }
  for (const QuarantinedInput& q : c.quarantined) PrintQuarantined(q, "  quarantined");
  for (const ConflictRouting& r : c.conflict_reports) {
    std::printf("  conflict  #%lld %s\n", static_cast<long long>(r.quarantine_id),
                P(r.text()).c_str());
  }
  for (const GapRecord& g : c.gap_records) {
    std::printf("  gap       %s\n", GapRecordText(g).c_str());
  }
  for (const ProjectionCorrection& k : c.corrections) {
    std::printf("  corrected by %s at %s (%s%s): %s\n      before %s\n      after  %s\n",
                P(k.by).c_str(), FormatTime(k.at_ms).c_str(), P(k.basis).c_str(),
                k.forced ? ", forced" : "", P(k.note).c_str(), PrintableJson(k.before_json).c_str(),
                PrintableJson(k.after_json).c_str());
  }
  for (const EvidenceRecord& r : c.evidence) {
    std::printf("  evidence  %-10s from %s:%s (v%s)%s\n", P(r.name).c_str(), P(r.source).c_str(),
                P(r.event_id).c_str(),
                r.subject_version ? std::to_string(*r.subject_version).c_str() : "-",
                r.detail.empty() ? "" : ("  " + P(r.detail)).c_str());
  }
  for (const EffectIntent& e : c.effects) {
    std::printf("  effect    %-10s %s  %s, %lld attempt(s)%s\n", P(e.effect).c_str(),
                P(e.key).c_str(), std::string(EffectStateName(e.state)).c_str(),
                static_cast<long long>(e.attempts),
                e.last_error.empty() ? "" : ("; last: " + P(e.last_error)).c_str());
  }
  for (const CompensationRecord& r : c.compensations) {
    std::printf("  compensation    %s (owner %s v%s, event %s): %s%s\n", P(r.key).c_str(),
                P(r.owner_source).c_str(),
                r.owner_version ? std::to_string(*r.owner_version).c_str() : "-",
                P(r.event_id).c_str(), std::string(CompensationStateName(r.state)).c_str(),
                r.detail.empty() ? "" : (", " + P(r.detail)).c_str());
  }
}

void WriteEvidenceText(const std::string& subject, const std::vector<ConsumerEvidence>& all,
                       const std::vector<QuarantinedInput>& unassigned, int64_t now_ms) {
  std::printf("evidence for %s\n", P(subject).c_str());
  for (const ConsumerEvidence& c : all) {
    std::printf("\n== consumer %s\n", P(c.consumer).c_str());
    WriteProjectionText(c);
    WriteRecordsText(c, now_ms);
  }
  if (!unassigned.empty()) std::printf("\n");
  for (const QuarantinedInput& q : unassigned) PrintQuarantined(q, "  quarantined (no consumer)");
}

int RunEvidence(const EvidenceFlags& flags) {
  auto store = OpenStore(flags.store, {.read_only = true});
  if (!store.ok()) {
    std::cerr << "evident evidence: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  auto snapshot = (*store)->Read();
  auto packet = snapshot.ok() ? ReadEvidence(**snapshot, flags.subject, flags.consumer)
                              : Result<EvidencePacket>(snapshot.status());
  if (!packet.ok()) {
    std::cerr << "evident evidence: " << packet.status().ToString() << "\n";
    return kExitUsage;
  }
  if (packet->truncated) {
    std::cerr << "evident evidence: the store holds more than " << kReadRowsMaxDefault
              << " rows in some list of this subject; each list shows its first "
              << kReadRowsMaxDefault << "\n";
  }
  const std::vector<ConsumerEvidence>& all = packet->consumers;
  const std::vector<QuarantinedInput>& unassigned = packet->unassigned;
  const int64_t now = SystemClock().NowMs();
  if (flags.format == "json") {
    std::string out;
    AppendEvidenceJson(*packet, now, out);
    out.push_back('\n');
    if (!WriteStdout(out)) return kExitUsage;
  } else {
    WriteEvidenceText(flags.subject, all, unassigned, now);
    if (const std::optional<RetentionRun>& r = packet->retention; r.has_value()) {
      std::cout << "Retention: what settled before " << rfc3339::FormatMs(r->horizon_ms)
                << " (journal entries, closed records, settled effects' logs, settled intents "
                   "a later one of their effect follows, sent outbox rows, applied receipts) was "
                   "removed at "
                << rfc3339::FormatMs(r->at_ms)
                << (r->archive.empty() ? std::string(", not archived")
                                       : ", archived to " + r->archive)
                << "; the keys of receipts and intents stay as digests (a redelivery is still "
                   "a duplicate, an effect is never intended twice), and projections, each "
                   "effect's latest intent and anything open stay.\n";
      if (r->forgot_before_ms > 0) {
        std::cout << "Retention forgot the ledger digests of receipts committed before "
                  << rfc3339::FormatMs(r->forgot_before_ms)
                  << ": a redelivery of such an event is decided afresh.\n";
      }
    }
  }
  return packet->known() ? kExitOk : kExitNegative;  // 1: the store knows nothing of the subject
}

struct GapsFlags {
  std::string store;
  int64_t within_seconds = 60;
  bool all = false;
  std::string format = "text";
};

int RunGaps(const GapsFlags& flags) {
  auto store = OpenStore(flags.store, {.read_only = true});
  if (!store.ok()) {
    std::cerr << "evident gaps: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  auto snapshot = (*store)->Read();
  auto read = snapshot.ok() ? ReadGaps(**snapshot) : Result<Gaps>(snapshot.status());
  if (!read.ok()) {
    std::cerr << "evident gaps: " << read.status().ToString() << "\n";
    return kExitUsage;
  }
  if (read->truncated) {
    std::cerr << "evident gaps: more than " << kReadRowsMaxDefault
              << " events are deferred; the gaps of the first " << kReadRowsMaxDefault
              << " are shown\n";
  }
  const int64_t now = SystemClock().NowMs();
  std::string out;
  json::Writer w(out);
  w.BeginArray();
  int shown = 0;
  for (const Gap& g : read->gaps) {
    const int64_t left_ms = g.deadline_at_ms - now;
    if (!flags.all && left_ms > flags.within_seconds * 1000) continue;
    ++shown;
    std::string versions;
    for (int64_t v : g.waiting_versions)
      versions += (versions.empty() ? "" : ",") + std::to_string(v);
    if (flags.format == "json") {
      std::string one;
      AppendGapJson(g, now, one);
      w.Raw(one);
    } else {
      std::printf("%-20s %-20s expects v%lld, waiting v%s, deadline %s (%s), route %s%s\n",
                  P(g.consumer).c_str(), P(g.subject).c_str(),
                  static_cast<long long>(g.expected_version), versions.c_str(),
                  FormatTime(g.deadline_at_ms).c_str(),
                  left_ms < 0 ? ("overdue by " + std::to_string(-left_ms / 1000) + "s").c_str()
                              : (std::to_string(left_ms / 1000) + "s left").c_str(),
                  std::string(GapRouteName(g.route)).c_str(),
                  g.record ? ("\n    " + GapRecordText(*g.record)).c_str() : "");
    }
  }
  w.EndArray();
  if (flags.format == "json") {
    std::printf("%s\n", out.c_str());
  } else if (shown == 0) {
    std::printf("no open gaps%s\n", flags.all ? "" : " past or near their deadline");
  }
  return kExitOk;
}

struct GapsCheckFlags {
  std::string store;
  int64_t partitions = 1;
};

int RunGapsCheck(const GapsCheckFlags& flags) {
  auto store = OpenStore(flags.store, {.create = false});
  auto check = store.ok() ? CheckGapDeadlines(**store, SystemClock().NowMs(),
                                              {.partition_count = flags.partitions})
                          : Result<GapCheck>(store.status());
  if (!check.ok()) {
    std::cerr << "evident gaps check: " << check.status().ToString() << "\n";
    return kExitUsage;
  }
  std::printf("replay requested %lld, opened for a person %lld, reported %lld, closed %lld\n",
              static_cast<long long>(check->requested), static_cast<long long>(check->manual),
              static_cast<long long>(check->reported), static_cast<long long>(check->closed));
  return kExitOk;
}

struct GapsResolveFlags {
  std::string store, consumer, subject, by, note;
};

int RunGapsResolve(const GapsResolveFlags& flags) {
  auto store = OpenStore(flags.store, {.create = false});
  auto resolved = store.ok() ? ResolveGap(**store, flags.consumer, flags.subject, flags.by,
                                          flags.note, SystemClock())
                             : Result<int64_t>(store.status());
  if (!resolved.ok()) {
    std::cerr << "evident gaps resolve: " << resolved.status().ToString() << "\n";
    return resolved.status().code() == Code::kNotFound ? kExitNegative : kExitUsage;
  }
  std::printf("resolved %lld gap record(s) of %s / %s\n", static_cast<long long>(*resolved),
              P(flags.consumer).c_str(), P(flags.subject).c_str());
  return kExitOk;
}

struct GuardFlags {
  std::string config, store, consumer, subject, action;
  std::string format = "text";
};

int RunGuard(const GuardFlags& flags) {
  auto store = OpenStore(flags.store, {.read_only = true});
  if (!store.ok()) {
    std::cerr << "evident guard: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  auto snapshot = (*store)->Read();
  // The file's consumers, or (without --config) the store's own.
  Result<Config> config = Status::Internal("no configuration");
  if (!flags.config.empty()) {
    config = LoadConfig(flags.config);
  } else if (snapshot.ok()) {
    Result<std::unique_ptr<Pipeline>> stored = LatestStoredPipeline(**snapshot);
    config = stored.ok() ? Result<Config>((*stored)->config()) : stored.status();
  } else {
    config = snapshot.status();
  }
  if (!config.ok()) {
    std::cerr << "evident guard: " << config.status().ToString() << "\n";
    return kExitUsage;
  }
  const ConsumerConfig* consumer = config->Find(flags.consumer);
  if (consumer == nullptr) {
    std::cerr << "evident guard: no consumer '" << flags.consumer << "' in "
              << (flags.config.empty() ? config->path : flags.config) << "\n";
    return kExitUsage;
  }
  auto decision = snapshot.ok() ? EvaluateGuard(**snapshot, *consumer, flags.subject, flags.action)
                                : Result<GuardDecision>(snapshot.status());
  if (!decision.ok()) {
    std::cerr << "evident guard: " << decision.status().ToString() << "\n";
    return kExitUsage;
  }
  if (flags.format == "json") {
    std::string out;
    json::Writer w(out);
    w.BeginObject().Field("consumer", flags.consumer).Field("subject", flags.subject);
    w.Field("action", flags.action).Field("decision", decision->allowed ? "allowed" : "denied");
    w.Key("reasons").BeginArray();
    for (const std::string& r : decision->reasons) w.String(r);
    w.EndArray().EndObject();
    std::printf("%s\n", out.c_str());
  } else {
    std::printf("%s %s %s: %s\n", P(flags.consumer).c_str(), P(flags.action).c_str(),
                P(flags.subject).c_str(), decision->allowed ? "allowed" : "denied");
    for (const std::string& r : decision->reasons) std::printf("  - %s\n", P(r).c_str());
  }
  return decision->allowed ? kExitOk : kExitNegative;
}

// `evidence SUBJECT`.
void AddEvidenceCommand(CLI::App& app, Runner& run) {
  auto evidence = std::make_shared<EvidenceFlags>();
  CLI::App* cmd = app.add_subcommand(
      "evidence",
      "Everything the store knows about one subject, per consumer: the evidence packet.");
  cmd->add_option("subject", evidence->subject, "The subject, e.g. order-417")->required();
  cmd->add_option("--store", evidence->store, StoreHelp())->required();
  cmd->add_option("--consumer", evidence->consumer, "Only this consumer");
  AddFormatOption(*cmd, evidence->format);
  cmd->callback([evidence, &run] { run = [evidence] { return RunEvidence(*evidence); }; });
}

// `gaps`, `gaps check` and `gaps resolve`.
void AddGapsCommands(CLI::App& app, Runner& run) {
  auto gaps = std::make_shared<GapsFlags>();
  CLI::App* cmd =
      app.add_subcommand("gaps",
                         "Open version gaps past or near their deadline, overdue first; "
                         "`gaps check` acts on overdue ones, `gaps resolve` closes one.");
  cmd->add_option("--store", gaps->store, StoreHelp());
  cmd->add_option("--within", gaps->within_seconds,
                  "Show gaps whose deadline is at most this many seconds away (or past)")
      ->check(IntegerFrom(0, kGapDeadlineSecondsMax))
      ->capture_default_str();
  cmd->add_flag("--all", gaps->all, "Show every open gap");
  AddFormatOption(*cmd, gaps->format);
  CLI::App* gaps_cmd = cmd;
  // No store for the command that runs: given empty (before or after its word), or not given.
  const auto no_store = [gaps_cmd](const CLI::App* sub) -> CLI::ParseError {
    if (gaps_cmd->count("--store") > 0 || (sub != nullptr && sub->count("--store") > 0)) {
      return CLI::ValidationError("--store was given an empty value (an unset variable?)");
    }
    return CLI::RequiredError("--store");
  };
  cmd->callback([gaps, gaps_cmd, no_store, &run] {
    if (!gaps_cmd->get_subcommands().empty()) {  // check or resolve runs
      // --store before the word is theirs too (taken when they have none of their own); the
      // listing's options are not, and are refused rather than dropped.
      for (const char* listing : {"--within", "--all", "--format"}) {
        if (gaps_cmd->count(listing) > 0) {
          throw CLI::ValidationError(std::string(listing) +
                                     " lists gaps; it does not apply to `gaps " +
                                     gaps_cmd->get_subcommands().front()->get_name() + "`");
        }
      }
      return;
    }
    if (gaps->store.empty()) throw no_store(nullptr);
    run = [gaps] { return RunGaps(*gaps); };
  });

  auto check = std::make_shared<GapsCheckFlags>();
  CLI::App* sub = cmd->add_subcommand(
      "check",
      "Act on every gap past its deadline, once: request a replay, open a record for a "
      "person, or report, per its route.");
  sub->add_option("--store", check->store, StoreHelp() + " (also before `check`)");
  sub->add_option("--partitions", check->partitions, "Outbox partitions (as `outbox append`)")
      ->check(IntegerFrom(1, 1 << 20));
  sub->callback([check, gaps, sub, no_store, &run] {
    if (check->store.empty()) check->store = gaps->store;
    if (check->store.empty()) throw no_store(sub);
    run = [check] { return RunGapsCheck(*check); };
  });

  auto resolve = std::make_shared<GapsResolveFlags>();
  sub = cmd->add_subcommand("resolve", "Close the open gap records of one consumer and subject.");
  sub->add_option("--store", resolve->store, StoreHelp() + " (also before `resolve`)");
  sub->add_option("--consumer", resolve->consumer, "Consumer id")->required();
  sub->add_option("--subject", resolve->subject, "Subject")->required();
  sub->add_option("--by", resolve->by, "Who resolves it")->required();
  sub->add_option("--note", resolve->note, "How it was resolved")->required();
  sub->callback([resolve, gaps, sub, no_store, &run] {
    if (resolve->store.empty()) resolve->store = gaps->store;
    if (resolve->store.empty()) throw no_store(sub);
    run = [resolve] { return RunGapsResolve(*resolve); };
  });
}

// `guard`.
void AddGuardCommand(CLI::App& app, Runner& run) {
  auto guard = std::make_shared<GuardFlags>();
  CLI::App* cmd = app.add_subcommand(
      "guard",
      "May ACTION be done to SUBJECT now? Prints allowed or denied with every reason; "
      "exit 0 allowed, 1 denied.");
  cmd->add_option("--config", guard->config,
                  "evident.yaml (default: the consumers the store keeps, `consumers push`)");
  cmd->add_option("--store", guard->store, StoreHelp())->required();
  cmd->add_option("--consumer", guard->consumer, "Consumer whose projection decides")->required();
  cmd->add_option("--subject", guard->subject, "Subject, e.g. order-417")->required();
  cmd->add_option("--action", guard->action, "Guarded action, e.g. ship")->required();
  AddFormatOption(*cmd, guard->format);
  cmd->callback([guard, &run] { run = [guard] { return RunGuard(*guard); }; });
}

}  // namespace

void AddEvidenceCommands(CLI::App& app, Runner& run) {
  AddEvidenceCommand(app, run);
  AddGapsCommands(app, run);
  AddGuardCommand(app, run);
}

}  // namespace evident::cli
