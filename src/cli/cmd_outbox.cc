// `evident outbox append|stats|list|park|unpark`: appending events to a store's outbox, reading
// it back, and setting a row the destination keeps refusing aside.
// The checks and the store work are the library's (evident/outbox.h, store.h); this file parses
// flags and formats.
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/text.h"
#include "evident/clock.h"
#include "evident/outbox.h"
#include "evident/progress.h"
#include "evident/source.h"
#include "evident/store.h"
#include "evident/stored_contracts.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct AppendFlags {
  std::string store, contracts, input = "-";
  std::string profile = "cloudevents", profile_file, schema_version_at, subject_version_at;
  int64_t partitions = 1;
  int64_t batch_count_max = 1000;
  int64_t event_bytes_max = int64_t{1} << 20;
  std::string progress = "auto";
  std::vector<std::string> settings_given;  // the append settings given on the command line
};

// The Outbox that checks the events of a transaction: the directory's, or the store's latest
// contracts as that transaction sees them.
using OutboxFor = std::function<Result<Outbox*>(Transaction&)>;

struct ReadFlags {
  std::string store;
  std::string format = "text";
  bool pending = false, parked = false;
  int64_t rows_max = kReadRowsMaxDefault;
};

struct ParkFlags {
  std::string store, reason;
  int64_t seq = 0;
};

void AppendResultJson(int64_t index, const OutboxDecision& d, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Key("index").Int(index).Field("outcome", OutboxDecisionName(d.outcome));
  w.Key("seq");
  d.seq ? w.Int(*d.seq) : w.Null();
  w.Key("reason");
  d.reason.empty() ? w.Null() : w.String(d.reason);
  if (!d.message.empty()) w.Field("message", d.message);
  w.EndObject();
  out.push_back('\n');
}

// Commits the open batch, then prints its results: a line printed is a row committed.
// What a failure with a batch open means for it.
Status RolledBack(const Status& status) {
  return Status(status.code(), status.message() +
                                   " (the open batch was rolled back; the result lines printed "
                                   "before it are committed)");
}

Status CommitBatch(std::unique_ptr<Transaction>& tx, std::string& results) {
  if (tx == nullptr) return Status::Ok();
  const Status committed = tx->Commit();
  tx.reset();
  if (!committed.ok()) return RolledBack(committed);
  // Flushed per batch, so a result that cannot be written is reported with its batch.
  if (!WriteStdout(results) || std::fflush(stdout) != 0) {
    return Status::IoError(std::string("cannot write the results: ") + std::strerror(errno) +
                           " (the batch is committed; `evident outbox list` shows its rows)");
  }
  results.clear();
  return Status::Ok();
}

// Appends every event of the source, in transactions of batch_count_max; true in `refused`
// when any event was not appended (nor a duplicate).
Status AppendAll(const OutboxFor& outbox_for, Store& store, Source& source, int64_t batch_count_max,
                 ProgressBar& progress, bool& refused) {
  std::unique_ptr<Transaction> tx;
  Outbox* outbox = nullptr;  // of the open transaction
  std::string results;
  Message message;
  int64_t in_batch = 0, events = 0, refusals = 0;
  const auto show = [&] {
    const Source::InputProgress input = source.input_progress();
    progress.Update(input.done, input.total, events,
                    refusals == 0 ? "" : std::to_string(refusals) + " refused");
  };
  while (true) {
    if (progress.Due()) show();
    const Result<Source::Fetched> fetched = source.Fetch(message, -1);
    if (!fetched.ok()) return tx == nullptr ? fetched.status() : RolledBack(fetched.status());
    if (*fetched != Source::Fetched::kMessage) break;
    if (tx == nullptr) {
      EVIDENT_ASSIGN_OR_RETURN(tx, store.Begin());
      // One set per transaction: the batch's events are checked against the same contracts.
      const Result<Outbox*> current = outbox_for(*tx);
      if (!current.ok()) return RolledBack(current.status());
      outbox = *current;
    }
    // An input the file's layout already refused (a broken batch array) is not an event.
    const Result<OutboxDecision> decision =
        message.rejection
            ? OutboxDecision{.outcome = OutboxDecisionOutcome::kRejected,
                             .reason = std::string(ReasonCode(message.rejection->reason)),
                             .message = message.rejection->message}
            : outbox->Append(*tx, message.bytes, SystemClock().NowMs());
    if (!decision.ok()) return RolledBack(decision.status());
    const bool taken = decision->outcome == OutboxDecisionOutcome::kAppended ||
                       decision->outcome == OutboxDecisionOutcome::kDuplicate;
    refusals += taken ? 0 : 1;
    ++events;
    AppendResultJson(message.index, *decision, results);
    if (++in_batch >= batch_count_max) {
      EVIDENT_RETURN_IF_ERROR(CommitBatch(tx, results));
      in_batch = 0;
    }
  }
  EVIDENT_RETURN_IF_ERROR(CommitBatch(tx, results));
  show();
  progress.Finish();
  refused = refusals > 0;
  return Status::Ok();
}

// The largest event --event-bytes-max (and a pushed set) may allow.
constexpr int64_t kEventBytesMaxMax = int64_t{64} << 20;

// The outbox of the contracts directory --contracts names, with the settings of the flags.
Result<std::unique_ptr<Outbox>> DirectoryOutbox(const AppendFlags& flags) {
  Result<Profile> profile =
      ChooseProfile(flags.profile, flags.profile_file, flags.schema_version_at);
  if (profile.ok() && !flags.subject_version_at.empty()) {
    profile =
        IsValidJsonPointer(flags.subject_version_at)
            ? Result<Profile>(profile->WithAttributeAt("subjectversion", flags.subject_version_at))
            : Result<Profile>(
                  Status::InvalidArgument("--subject-version-at must be a JSON Pointer"));
  }
  if (!profile.ok()) return profile.status();
  return Outbox::Create({.contracts_dir = flags.contracts,
                         .profile = *profile,
                         .partition_count = flags.partitions,
                         .event_bytes_max = flags.event_bytes_max});
}

// The store's latest contracts, when it holds some: then they and their settings check every
// event, and a directory or settings on the command line are refused (one source of truth).
Result<std::optional<StoredContracts>> StoreContracts(Store& store, const AppendFlags& flags) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
  EVIDENT_ASSIGN_OR_RETURN(std::optional<StoredContracts> latest, snapshot->ContractsAt(0));
  if (!latest && flags.contracts.empty()) {
    return Status::InvalidArgument(
        "the store holds no contracts: give --contracts DIR, or push them first (evident "
        "contracts push --store S --contracts DIR)");
  }
  if (!latest) return latest;
  const std::string held = "the store holds contracts v" + std::to_string(latest->version) +
                           " (evident contracts show), which check every event with their "
                           "settings: ";
  if (!flags.contracts.empty()) {
    return Status::InvalidArgument(held + "leave out --contracts, or push the directory");
  }
  if (!flags.settings_given.empty()) {
    return Status::InvalidArgument(held + "leave out " + flags.settings_given.front() +
                                   ", or push the contracts with it");
  }
  return latest;
}

int RunAppend(const AppendFlags& flags) {
  auto store = OpenStore(flags.store);
  auto stored = store.ok() ? StoreContracts(**store, flags)
                           : Result<std::optional<StoredContracts>>(store.status());
  auto directory = stored.ok() && !stored->has_value()
                       ? DirectoryOutbox(flags)
                       : Result<std::unique_ptr<Outbox>>(std::unique_ptr<Outbox>());
  if (!stored.ok()) directory = stored.status();
  // With the store's contracts the input admits the largest event a set may allow, and each
  // set's Outbox refuses what its own settings do not (a later set may allow more).
  const int64_t event_bytes_max =
      directory.ok() && stored->has_value() ? kEventBytesMaxMax : flags.event_bytes_max;
  auto source =
      directory.ok()
          ? OpenNdjsonSource(flags.input, {.event_bytes_max = static_cast<size_t>(event_bytes_max)})
          : Result<std::unique_ptr<Source>>(directory.status());
  if (!source.ok()) {
    std::cerr << "evident outbox append: " << source.status().ToString() << "\n";
    return kExitUsage;
  }
  StoredOutbox stored_outbox;
  const OutboxFor outbox_for = [&](Transaction& tx) -> Result<Outbox*> {
    if (*directory == nullptr) return stored_outbox.For(tx);
    // Contracts pushed since the run began: they are the source of truth now.
    EVIDENT_ASSIGN_OR_RETURN(const int64_t pushed, tx.LatestContractsVersion());
    if (pushed != 0) {
      return Status::FailedPrecondition("contracts v" + std::to_string(pushed) +
                                        " were pushed to the store during the run: leave out "
                                        "--contracts and run again");
    }
    return directory->get();
  };
  NoteTerminalInput(flags.input, "outbox append");
  bool refused = false;
  ProgressBar progress(ProgressFile(flags.progress), "events");
  const Status appended =
      AppendAll(outbox_for, **store, **source, flags.batch_count_max, progress, refused);
  if (!appended.ok()) {
    progress.Finish();  // the line ends before the error is said
    std::cerr << "evident outbox append: " << appended.ToString() << "\n";
    return kExitUsage;
  }
  return refused ? kExitNegative : kExitOk;
}

void PrintStatsText(const OutboxStats& s) {
  std::printf("pending               %lld\n", static_cast<long long>(s.pending));
  std::printf("sent                  %lld\n", static_cast<long long>(s.sent));
  std::printf("parked                %lld\n", static_cast<long long>(s.parked));
  if (s.oldest_pending_age_ms) {
    std::printf("oldest pending age    %lld ms\n",
                static_cast<long long>(*s.oldest_pending_age_ms));
  } else {
    std::printf("oldest pending age    -\n");
  }
  std::printf("attempts max          %lld\n", static_cast<long long>(s.attempts_max));
}

int RunStats(const ReadFlags& flags) {
  auto store = OpenStore(flags.store, {.read_only = true});
  auto snapshot = store.ok() ? (*store)->Read() : Result<std::unique_ptr<Snapshot>>(store.status());
  auto stats = snapshot.ok() ? (*snapshot)->OutboxStatsNow(SystemClock().NowMs())
                             : Result<OutboxStats>(snapshot.status());
  if (!stats.ok()) {
    std::cerr << "evident outbox stats: " << stats.status().ToString() << "\n";
    return kExitUsage;
  }
  if (flags.format == "text") {
    PrintStatsText(*stats);
    return kExitOk;
  }
  std::string out;
  json::Writer w(out);
  w.BeginObject().Key("pending").Int(stats->pending).Key("sent").Int(stats->sent);
  w.Key("parked").Int(stats->parked);
  w.Key("oldest_pending_age_ms");
  stats->oldest_pending_age_ms ? w.Int(*stats->oldest_pending_age_ms) : w.Null();
  w.Key("attempts_max").Int(stats->attempts_max).EndObject();
  out.push_back('\n');
  return WriteStdout(out) ? kExitOk : kExitUsage;
}

void RowText(const OutboxRow& r, std::string& out) {
  const std::string attempts =
      std::to_string(r.attempts) + " attempt(s)" +
      (r.last_error.empty() ? "" : ", last error: " + Printable(r.last_error));
  out += std::to_string(r.seq) + "  " + Printable(r.source) + ":" + Printable(r.event_id) + "  " +
         Printable(r.type) + "  subject " + (r.subject.empty() ? "-" : Printable(r.subject)) +
         "  partition " + std::to_string(r.partition) + "  ";
  if (r.sent_at_ms) {
    out += "sent to " + Printable(r.stream) +
           (r.stream_sequence ? " #" + std::to_string(*r.stream_sequence) : "");
  } else if (r.parked_at_ms) {
    out += "parked: " + Printable(r.parked_reason) + "; " + attempts;
  } else {
    out += "pending, " + attempts;
  }
  out += "\n";
}

// The rows to list: all, the pending ones or the parked ones.
Result<Rows<OutboxRow>> ListedRows(Snapshot& snapshot, const ReadFlags& flags) {
  const OutboxSelect select = flags.parked    ? OutboxSelect::kParked
                              : flags.pending ? OutboxSelect::kPending
                                              : OutboxSelect::kAll;
  return snapshot.OutboxRows(select, 0, flags.rows_max);
}

int RunList(const ReadFlags& flags) {
  auto store = OpenStore(flags.store, {.read_only = true});
  auto snapshot = store.ok() ? (*store)->Read() : Result<std::unique_ptr<Snapshot>>(store.status());
  auto rows =
      snapshot.ok() ? ListedRows(**snapshot, flags) : Result<Rows<OutboxRow>>(snapshot.status());
  if (!rows.ok()) {
    std::cerr << "evident outbox list: " << rows.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string out;
  for (const OutboxRow& r : rows->rows)
    flags.format == "json" ? AppendOutboxRowJson(r, out) : RowText(r, out);
  if (!WriteStdout(out)) return kExitUsage;
  if (rows->truncated) {
    std::cerr << "evident outbox list: more than " << flags.rows_max
              << " rows; the first are shown (--limit)\n";
  }
  return kExitOk;
}

// Parks (`park`) or unparks one row in a transaction of its own. Exit 1 when the row is not
// there or not in a state to change (the message says which), 2 when the store fails.
int RunPark(const ParkFlags& flags, bool park) {
  const char* command = park ? "evident outbox park" : "evident outbox unpark";
  const auto failed = [&](const Status& status, int exit_code) {
    std::cerr << command << ": " << status.ToString() << "\n";
    return exit_code;
  };
  auto store = OpenStore(flags.store);
  if (!store.ok()) return failed(store.status(), kExitUsage);
  auto tx = (*store)->Begin();
  if (!tx.ok()) return failed(tx.status(), kExitUsage);
  const Status changed = park ? (*tx)->ParkOutbox(flags.seq, flags.reason, SystemClock().NowMs())
                              : (*tx)->UnparkOutbox(flags.seq);
  if (!changed.ok()) {
    (void)(*tx)->Rollback();
    // The row is not there, or not in a state to change: a refusal, not a failure.
    const bool refused =
        changed.code() == Code::kNotFound || changed.code() == Code::kFailedPrecondition;
    return failed(changed, refused ? kExitNegative : kExitUsage);
  }
  if (Status committed = (*tx)->Commit(); !committed.ok()) return failed(committed, kExitUsage);
  const std::string seq = std::to_string(flags.seq);
  const std::string done = "outbox row " + seq + (park ? " parked" : " is pending again");
  const std::string said =
      park ? done +
                 ": no relay round that begins from now on publishes it (a round already "
                 "sending it marks it sent; `evident outbox list` shows which); `evident outbox "
                 "unpark --seq " +
                 seq + "` makes it pending again\n"
           : done + ": the next relay round publishes it\n";
  if (WriteStdout(said) && std::fflush(stdout) == 0) return kExitOk;
  // The change is committed: say so where it can still be read, or the exit status alone would
  // suggest that it did not happen.
  std::cerr << command << ": " << done
            << " (committed), but standard output could not be written\n";
  return kExitUsage;
}

// `outbox append`.
void AddAppendCommand(CLI::App& outbox, Runner& run) {
  auto append = std::make_shared<AppendFlags>();
  CLI::App* cmd = outbox.add_subcommand(
      "append",
      "Check NDJSON CloudEvents (envelope and payload schema) and append them to the outbox; one "
      "result line per event. Exit 0 when every event was appended or a duplicate, 1 when any "
      "was refused, 2 usage or I/O.");
  cmd->add_option("--store", append->store, StoreHelp())->required();
  cmd->add_option("--contracts", append->contracts,
                  "Contracts directory (payload schemas); without it, the contracts the store "
                  "holds (evident contracts push) and their settings");
  cmd->add_option("input", append->input, "NDJSON file, or - for standard input")
      ->capture_default_str();
  cmd->add_option("--profile", append->profile, "Envelope profile: cloudevents, flat, ...")
      ->capture_default_str();
  cmd->add_option("--profile-file", append->profile_file, "Envelope profile as JSON")
      ->excludes("--profile");
  cmd->add_option("--schema-version-at", append->schema_version_at,
                  "JSON Pointer of the schema version, e.g. /data/schemaVersion");
  cmd->add_option("--subject-version-at", append->subject_version_at,
                  "JSON Pointer of the owner's version of the subject, e.g. /data/orderVersion "
                  "(kept with the row: a replay request is answered by version)");
  cmd->add_option("--partitions", append->partitions, "Partitions, by a hash of the subject")
      ->check(IntegerFrom(1, 1 << 16))
      ->capture_default_str();
  cmd->add_option("--batch-count-max", append->batch_count_max, "Events per transaction")
      ->check(IntegerFrom(1, 1'000'000))
      ->capture_default_str();
  cmd->add_option("--event-bytes-max", append->event_bytes_max, "Largest event, in bytes")
      ->check(IntegerFrom(int64_t{64} << 10, kEventBytesMaxMax))  // CloudEvents: 64 KiB at least
      ->capture_default_str();
  AddProgressOption(*cmd, append->progress);
  cmd->callback([append, cmd, &run] {
    for (const char* name : {"--profile", "--profile-file", "--schema-version-at",
                             "--subject-version-at", "--partitions", "--event-bytes-max"}) {
      if (cmd->count(name) > 0) append->settings_given.emplace_back(name);
    }
    run = [append] { return RunAppend(*append); };
  });
}

}  // namespace

void AddOutboxCommands(CLI::App& app, Runner& run) {
  CLI::App* outbox = app.add_subcommand("outbox", "The transactional outbox of a store.");
  outbox->require_subcommand(1);

  AddAppendCommand(*outbox, run);

  auto stats = std::make_shared<ReadFlags>();
  CLI::App* cmd = outbox->add_subcommand("stats", "Pending and sent rows, the oldest pending age.");
  cmd->add_option("--store", stats->store, StoreHelp())->required();
  AddFormatOption(*cmd, stats->format);
  cmd->callback([stats, &run] { run = [stats] { return RunStats(*stats); }; });

  auto list = std::make_shared<ReadFlags>();
  cmd = outbox->add_subcommand("list", "The outbox's rows in sequence order.");
  cmd->add_option("--store", list->store, StoreHelp())->required();
  cmd->add_flag("--pending", list->pending, "Only rows waiting to be sent (not parked)");
  cmd->add_flag("--parked", list->parked, "Only parked rows")->excludes("--pending");
  cmd->add_option("--limit", list->rows_max, "Rows shown at most")
      ->check(IntegerFrom(1, 1'000'000))
      ->capture_default_str();
  AddFormatOption(*cmd, list->format);
  cmd->callback([list, &run] { run = [list] { return RunList(*list); }; });

  for (const bool park : {true, false}) {
    auto flags = std::make_shared<ParkFlags>();
    cmd = park ? outbox->add_subcommand(
                     "park",
                     "Set an unsent row aside (a row the destination keeps refusing): no relay "
                     "publishes it, the rows behind it go out, and it is kept whole until "
                     "unparked. Exit 1 when the row is not there, sent or parked already.")
               : outbox->add_subcommand(
                     "unpark", "Make a parked row pending again. Exit 1 when it is not parked.");
    cmd->add_option("--store", flags->store, StoreHelp())->required();
    cmd->add_option("--seq", flags->seq, "The row's seq (outbox list)")
        ->required()
        ->check(IntegerFrom(1, INT64_MAX));
    if (park) {
      cmd->add_option("--reason", flags->reason, "Why, in the operator's words (kept with the row)")
          ->required()
          ->check(CLI::Validator(
              [](const std::string& text) {
                if (!simdjson::validate_utf8(text.data(), text.size())) {
                  return std::string("a reason must be UTF-8 text");
                }
                const bool blank = std::all_of(text.begin(), text.end(), [](char c) {
                  return std::isspace(static_cast<unsigned char>(c)) != 0;
                });
                return blank ? std::string("a reason must say something") : std::string();
              },
              "TEXT"));
    }
    cmd->callback([flags, park, &run] { run = [flags, park] { return RunPark(*flags, park); }; });
  }
}

}  // namespace evident::cli
