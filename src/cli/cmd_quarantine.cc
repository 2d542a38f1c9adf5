// `evident quarantine list|show|replay|discard`: the inputs consumers did not apply, and what an
// operator does with them. The work is the library's (evident/quarantine.h, store.h); this file
// parses flags and formats.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/text.h"
#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/quarantine.h"
#include "evident/store.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct ListFlags {
  std::string store, consumer, reason, status;
  std::string format = "text";
  int64_t rows_max = kReadRowsMaxDefault;
};

struct ShowFlags {
  int64_t id = 0;
  std::string store;
  std::string format = "text";
};

struct ReplayFlags {
  std::string config, store, consumer, reason, by, note, outcomes, profile;
  std::vector<int64_t> ids;
  bool all = false, dry_run = false;
  int64_t batch_count_max = 256;
  std::string progress = "auto";
};

struct DiscardFlags {
  std::vector<int64_t> ids;
  std::string store, by, note;
};

std::string P(std::string_view text) { return Printable(text); }

Result<std::unique_ptr<Snapshot>> ReadStore(const std::string& uri, std::unique_ptr<Store>& store) {
  EVIDENT_ASSIGN_OR_RETURN(store, OpenStore(uri, {.read_only = true}));
  return store->Read();
}

void RecordText(const QuarantineRecord& r, std::string& out) {
  out += "#" + std::to_string(r.id) + "  " + std::string(QuarantineStatusName(r.status)) + "  " +
         std::to_string(r.attempts) + " attempt(s)  " +
         (r.consumer.empty() ? std::string("(no consumer)") : P(r.consumer)) + "  " +
         std::string(OutcomeName(r.outcome)) + "/" + P(r.reason) + "  " +
         (r.source.empty() && r.event_id.empty() ? std::string("-")
                                                 : P(r.source) + ":" + P(r.event_id)) +
         "  " + (r.subject.empty() ? std::string("-") : P(r.subject)) + "  first " +
         rfc3339::FormatMs(r.first_seen_ms) + "  last " + rfc3339::FormatMs(r.last_seen_ms) + "\n";
}

int RunList(const ListFlags& flags) {
  QuarantineFilter filter;
  if (!flags.consumer.empty()) filter.consumer = flags.consumer;
  if (!flags.reason.empty()) filter.reason = flags.reason;
  if (!flags.status.empty()) filter.status = ParseQuarantineStatus(flags.status);
  std::unique_ptr<Store> store;
  auto snapshot = ReadStore(flags.store, store);
  auto rows = snapshot.ok() ? (*snapshot)->ListQuarantine(filter, {}, flags.rows_max)
                            : Result<Rows<QuarantineRecord>>(snapshot.status());
  if (!rows.ok()) {
    std::cerr << "evident quarantine list: " << rows.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string out;
  for (const QuarantineRecord& r : rows->rows) {
    if (flags.format == "json") {
      AppendQuarantineJson(r, false, out);
      out.push_back('\n');
    } else {
      RecordText(r, out);
    }
  }
  if (flags.format == "text" && rows->rows.empty()) out = "no quarantined inputs match\n";
  if (!WriteStdout(out)) return kExitUsage;
  if (rows->truncated) {
    std::cerr << "evident quarantine list: more than " << flags.rows_max
              << " records match; the first are shown (--limit)\n";
  }
  return kExitOk;
}

int RunShow(const ShowFlags& flags) {
  std::unique_ptr<Store> store;
  auto snapshot = ReadStore(flags.store, store);
  auto record = snapshot.ok() ? (*snapshot)->FindQuarantine(flags.id)
                              : Result<std::optional<QuarantineRecord>>(snapshot.status());
  auto audit =
      record.ok() ? (*snapshot)->AuditOf(flags.id) : Result<Rows<QuarantineAudit>>(record.status());
  if (!audit.ok()) {
    std::cerr << "evident quarantine show: " << audit.status().ToString() << "\n";
    return kExitUsage;
  }
  if (!*record) {
    std::cerr << "evident quarantine show: no quarantine record " << flags.id << "\n";
    return kExitNegative;
  }
  const QuarantineRecord& r = **record;
  std::string out;
  if (flags.format == "json") {
    AppendQuarantineJson(r, true, out);
    out.pop_back();  // the closing brace: the audit goes inside
    out += ",\"audit\":";
    json::Writer w(out);
    w.BeginArray();
    for (const QuarantineAudit& a : audit->rows) {
      w.BeginObject().Field("action", QuarantineActionName(a.action)).Field("by", a.by);
      w.Field("note", a.note).Field("outcome", a.outcome).Key("reason");
      a.reason.empty() ? w.Null() : w.String(a.reason);
      w.Field("status_after", QuarantineStatusName(a.status_after));
      w.Field("at", rfc3339::FormatMs(a.at_ms)).EndObject();
    }
    w.EndArray();
    out += "}\n";
  } else {
    RecordText(r, out);
    if (r.schema_version) out += "schema version " + std::to_string(*r.schema_version) + "\n";
    if (r.subject_version) out += "subject version " + std::to_string(*r.subject_version) + "\n";
    out += "type " + (r.type.empty() ? std::string("-") : P(r.type)) + "\n";
    out += "message " + P(r.message) + "\n";
    out += "original bytes (" + std::to_string(r.raw.size()) + ") " + P(r.raw) + "\n";
    for (const QuarantineAudit& a : audit->rows) {
      out += std::string(QuarantineActionName(a.action)) + " by " + P(a.by) + " at " +
             rfc3339::FormatMs(a.at_ms) + ": " + P(a.outcome) +
             (a.reason.empty() ? "" : " (" + P(a.reason) + ")") + ", now " +
             std::string(QuarantineStatusName(a.status_after)) + "; note: " + P(a.note) + "\n";
    }
  }
  return WriteStdout(out) ? kExitOk : kExitUsage;
}

// Exactly one way of choosing records.
std::string SelectionClash(const ReplayFlags& flags) {
  const int ways = (flags.ids.empty() ? 0 : 1) + (flags.all ? 1 : 0) +
                   (flags.consumer.empty() && flags.reason.empty() ? 0 : 1);
  if (ways == 1) return "";
  return ways == 0 ? "choose the records: IDs, --consumer C and/or --reason R, or --all"
                   : "IDs, --consumer/--reason and --all exclude each other";
}

int RunReplay(const ReplayFlags& flags) {
  const std::string clash = SelectionClash(flags);
  if (!clash.empty()) {
    std::cerr << "evident quarantine replay: " << clash << "\n";
    return kExitUsage;
  }
  auto config = LoadConfig(flags.config);
  if (config.ok() && !flags.profile.empty()) {
    auto profile = Profile::Named(flags.profile);
    if (!profile.ok()) config = profile.status();
    if (profile.ok()) config->profile = std::move(profile).value();
  }
  if (config.ok() && !flags.outcomes.empty() && flags.outcomes != "-") {
    ReadPaths reads;
    AddConfigReads(*config, reads);
    AddStoreReads(flags.store, reads);
    if (const std::string taken = OutputClash("--outcomes", flags.outcomes, reads);
        !taken.empty()) {
      std::cerr << "evident quarantine replay: " << taken << "\n";
      return kExitUsage;
    }
  }
  auto pipeline =
      config.ok() ? Pipeline::Create(*config) : Result<std::unique_ptr<Pipeline>>(config.status());
  auto store = pipeline.ok() ? OpenStore(flags.store, {.create = false})
                             : Result<std::unique_ptr<Store>>(pipeline.status());
  if (!store.ok()) {
    std::cerr << "evident quarantine replay: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<WritableFile>> outcomes =
      flags.outcomes.empty() ? Result<std::unique_ptr<WritableFile>>(nullptr)
                             : OpenOutputFile(flags.outcomes, /*append=*/false);
  if (!outcomes.ok()) {
    std::cerr << "evident quarantine replay: cannot write " << flags.outcomes << ": "
              << outcomes.status().message() << "\n";
    return kExitUsage;
  }
  ReplayOptions options{.by = flags.by,
                        .note = flags.note,
                        .dry_run = flags.dry_run,
                        .batch_count_max = flags.batch_count_max,
                        .outcomes = outcomes->get(),
                        .progress = ProgressFile(flags.progress)};
  options.select.ids = flags.ids;
  if (!flags.consumer.empty()) options.select.consumer = flags.consumer;
  if (!flags.reason.empty()) options.select.reason = flags.reason;
  static CancelToken stop;
  options.cancel = &stop;
  InstallStopSignals(stop);
  auto summary = ReplayQuarantine(**pipeline, **store, options);
  const Status closed = *outcomes != nullptr ? (*outcomes)->Close() : Status::Ok();
  if (!closed.ok() && summary.ok()) {
    std::cerr << "evident quarantine replay: cannot write " << flags.outcomes << ": "
              << closed.message() << "\n";
    return kExitUsage;
  }
  if (!summary.ok()) {
    std::cerr << "evident quarantine replay: " << summary.status().ToString() << "\n";
    return summary.status().code() == Code::kNotFound ? kExitNegative : kExitUsage;
  }
  std::fprintf(flags.outcomes == "-" ? stderr : stdout,
               "%s%lld record(s): %lld replayed, %lld duplicate, %lld refused again%s\n",
               flags.dry_run ? "dry run (nothing committed): " : "",
               static_cast<long long>(summary->records), static_cast<long long>(summary->replayed),
               static_cast<long long>(summary->duplicates),
               static_cast<long long>(summary->refused),
               summary->stopped ? "; stopped after its last whole batch" : "");
  if (summary->stopped) return 128 + (LastStopSignal() != 0 ? LastStopSignal() : SIGTERM);
  return summary->refused > 0 ? kExitNegative : kExitOk;
}

int RunDiscard(const DiscardFlags& flags) {
  // A store that cannot be opened is a usage or I/O error (2), not a missing record (1): both
  // are kNotFound.
  auto store = OpenStore(flags.store, {.create = false});
  if (!store.ok()) {
    std::cerr << "evident quarantine discard: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  auto discarded =
      DiscardQuarantine(**store, flags.ids, flags.by, flags.note, SystemClock().NowMs());
  if (!discarded.ok()) {
    std::cerr << "evident quarantine discard: " << discarded.status().ToString()
              << " (nothing was discarded)\n";
    return discarded.status().code() == Code::kNotFound ||
                   discarded.status().code() == Code::kFailedPrecondition
               ? kExitNegative
               : kExitUsage;
  }
  std::printf("discarded %lld record(s)\n", static_cast<long long>(*discarded));
  return kExitOk;
}

void AddList(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<ListFlags>();
  CLI::App* cmd = parent.add_subcommand("list", "Quarantined inputs, by first-seen time.");
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--consumer", flags->consumer, "Only this consumer's records");
  cmd->add_option("--reason", flags->reason, "Only records with this reason code");
  cmd->add_option("--status", flags->status, "open, replayed or discarded")
      ->check(CLI::IsMember({"open", "replayed", "discarded"}));
  cmd->add_option("--limit", flags->rows_max, "At most this many records")
      ->check(IntegerFrom(1, 1000000));
  AddFormatOption(*cmd, flags->format);
  cmd->callback([flags, &run] { run = [flags] { return RunList(*flags); }; });
}

void AddShow(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<ShowFlags>();
  CLI::App* cmd = parent.add_subcommand("show", "One quarantined input, its bytes and its audit.");
  cmd->add_option("id", flags->id, "Record id")->required()->check(IntegerFrom(1, INT64_MAX));
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  AddFormatOption(*cmd, flags->format);
  cmd->callback([flags, &run] { run = [flags] { return RunShow(*flags); }; });
}

void AddReplay(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<ReplayFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "replay", "Send quarantined inputs through today's pipeline, in first-seen order.");
  cmd->add_option("ids", flags->ids, "Record ids")->check(IntegerFrom(1, INT64_MAX));
  cmd->add_option("--config", flags->config, "evident.yaml")->required();
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--consumer", flags->consumer, "The open records of this consumer");
  cmd->add_option("--reason", flags->reason, "The open records with this reason code");
  cmd->add_flag("--all", flags->all, "Every open record");
  cmd->add_option("--by", flags->by, "Who replays (for the audit)")->required();
  cmd->add_option("--note", flags->note, "Why (for the audit)")->required();
  cmd->add_flag("--dry-run", flags->dry_run, "Decide and print, commit nothing");
  AddProgressOption(*cmd, flags->progress);
  cmd->add_option("--outcomes", flags->outcomes, "One NDJSON line per record (FILE or -)");
  cmd->add_option("--profile", flags->profile, "Envelope profile (overrides the config)");
  cmd->add_option("--batch-count-max", flags->batch_count_max, "Records per transaction")
      ->check(IntegerFrom(1, 10000));
  cmd->callback([flags, &run] { run = [flags] { return RunReplay(*flags); }; });
}

void AddDiscard(CLI::App& parent, Runner& run) {
  auto flags = std::make_shared<DiscardFlags>();
  CLI::App* cmd =
      parent.add_subcommand("discard", "Close open records without applying them (all or none).");
  cmd->add_option("ids", flags->ids, "Record ids")->required()->check(IntegerFrom(1, INT64_MAX));
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--by", flags->by, "Who discards (for the audit)")->required();
  cmd->add_option("--note", flags->note, "Why (for the audit)")->required();
  cmd->callback([flags, &run] { run = [flags] { return RunDiscard(*flags); }; });
}

}  // namespace

void AddQuarantineCommands(CLI::App& app, Runner& run) {
  CLI::App* cmd = app.add_subcommand("quarantine", "Inputs the consumers did not apply.");
  cmd->require_subcommand(1);
  AddList(*cmd, run);
  AddShow(*cmd, run);
  AddReplay(*cmd, run);
  AddDiscard(*cmd, run);
}

}  // namespace evident::cli
