// `evident store migrate`: brings a store's schema to the layout this build writes.
// `evident store retain`: removes what is settled and older than a horizon (retention.h).
// `evident store install-functions`: evident's functions inside PostgreSQL (evident_pg.so).
// `evident store vacuum`: rewrites a SQLite store once so that it gives space back.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/rfc3339.h"
#include "evident/cancel.h"
#include "evident/retention.h"
#include "evident/store.h"
#include "evident/store_postgres.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct MigrateFlags {
  std::string store;
};

int RunMigrate(const MigrateFlags& flags) {
  const Result<StoreMigration> done = MigrateStore(flags.store);
  if (!done.ok()) {
    std::cerr << "evident store migrate: " << done.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string line = "store at layout " + std::to_string(done->layout);
  if (done->layout_before) {
    line += *done->layout_before == 0 ? " (created)"
            : *done->layout_before == done->layout
                ? " (already)"
                : " (was " + std::to_string(*done->layout_before) + ")";
  }
  line += "\n";
  return WriteStdout(line) ? kExitOk : kExitUsage;
}

struct InstallFunctionsFlags {
  std::string store, library, definer;
};

int RunInstallFunctions(const InstallFunctionsFlags& flags) {
  const Result<PostgresFunctions> done =
      InstallPostgresFunctions(flags.store, flags.library, {.definer = flags.definer});
  if (!done.ok()) {
    std::cerr << "evident store install-functions: " << done.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string line = "installed";
  for (size_t i = 0; i < done->names.size(); ++i) {
    line += (i == 0 ? " " : ", ") + done->names[i];
  }
  line += " in schema \"" + done->schema + "\" from " + flags.library;
  if (!flags.definer.empty()) {
    line += ", running as \"" + flags.definer + "\" (EXECUTE revoked from PUBLIC)";
  }
  line += "\n";
  return WriteStdout(line) ? kExitOk : kExitUsage;
}

void AddInstallFunctionsCommand(CLI::App& store, Runner& run) {
  auto flags = std::make_shared<InstallFunctionsFlags>();
  CLI::App* cmd = store.add_subcommand(
      "install-functions",
      "Create evident's functions (evident_append, evident_try_append, evident_compensate, "
      "evident_decide) in "
      "a PostgreSQL store's schema, from the module evident_pg.so on the database server: a "
      "superuser's step, after `store migrate` (docs/any-language.md). Exit 0 done, 2 refused.");
  cmd->add_option("--store", flags->store, "The PostgreSQL store (postgresql://...)")->required();
  cmd->add_option("--library", flags->library,
                  "evident_pg.so's absolute path on the database server, or $libdir/NAME (the "
                  "Debian package installs /usr/lib/evident/evident_pg.so and links it from "
                  "PostgreSQL 15's $libdir: '$libdir/evident_pg')")
      ->required();
  cmd->add_option("--security-definer", flags->definer,
                  "Run the functions with this role's rights (the store's owner), EXECUTE revoked "
                  "from PUBLIC: producers then need only EXECUTE on them, and no grant on the "
                  "store's tables, so the checks cannot be gone around");
  cmd->callback([flags, &run] { run = [flags] { return RunInstallFunctions(*flags); }; });
}

struct RetainFlags {
  std::string store, older_than, archive, format = "text", forget_ledger_after;
  bool dry_run = false;
  int64_t batch_count_max = 500;
  int64_t yield_percent = 100;
  int64_t vacuum_pages_max = 1'000'000;
};

// The archive on standard output: each batch written whole and flushed (and synced when it is
// a file) before its removal commits.
class StdoutArchive final : public RetentionArchive {
 public:
  Status Append(std::string_view lines) override {
    if (WriteStdout(lines)) return Status::Ok();
    return Status::IoError(std::string("write standard output: ") + std::strerror(errno));
  }
  Status Sync() override {
    if (std::fflush(stdout) != 0) {
      return Status::IoError(std::string("flush standard output: ") + std::strerror(errno));
    }
    // A pipe or a terminal cannot be synced; a file must be.
    if (::fsync(STDOUT_FILENO) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) {
      return Status::IoError(std::string("sync standard output: ") + std::strerror(errno));
    }
    return Status::Ok();
  }
  Status Close() override { return Sync(); }
  const std::string& name() const override { return name_; }

 private:
  std::string name_ = "-";
};

std::string Mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

struct SpaceReport {
  Store::Space space;
  int64_t given_back = 0;
};

std::string RetainText(const RetainSummary& s, const RetainFlags& flags, const SpaceReport& space) {
  static constexpr std::pair<const char*, const char*> kWhat[] = {
      {"journal entry", "journal entries"},
      {"quarantine record", "quarantine records"},
      {"gap record", "gap records"},
      {"effect log entry", "effect log entries"},
      {"intent kept as a key digest", "intents kept as key digests"},
      {"outbox row", "outbox rows"},
      {"receipt kept as a digest", "receipts kept as digests"}};
  static_assert(std::size(kWhat) == kRetainedKindCount);
  std::string out = std::string(s.dry_run ? "would remove" : "removed") + " what settled before " +
                    rfc3339::FormatMs(s.horizon_ms) + " (older than " + flags.older_than + "):";
  for (size_t k = 0; k < kRetainedKindCount; ++k) {
    out += std::string(k == 0 ? " " : ", ") + std::to_string(s.removed[k]) + " " +
           (s.removed[k] == 1 ? kWhat[k].first : kWhat[k].second);
  }
  if (!s.dry_run) out += " in " + std::to_string(s.transactions) + " transaction(s)";
  out += "\n";
  if (!flags.archive.empty() && !s.dry_run) {
    out += "archived " + std::to_string(s.archived) + " record(s) to " + flags.archive + "\n";
  }
  if (!flags.forget_ledger_after.empty()) {
    out += std::string(s.dry_run ? "would forget " : "forgot ") +
           std::to_string(s.digests_forgotten) + " ledger digest(s) of receipts committed before " +
           rfc3339::FormatMs(s.forget_horizon_ms) + " (older than " + flags.forget_ledger_after +
           "): a redelivery of one of those events is decided afresh\n";
  }
  if (s.cancelled) out += "stopped when asked: run it again to go on\n";
  if (!space.space.applies) return out;
  out += "space: " + Mib(space.space.free_bytes) + " free of " + Mib(space.space.file_bytes);
  if (space.space.incremental) {
    out += s.dry_run ? "\n" : "; " + Mib(space.given_back) + " given back\n";
  } else {
    out +=
        "; this store was created before incremental vacuum, so its free pages are reused "
        "but not given back: run `evident store vacuum --store " +
        flags.store +
        "` once (it rewrites the file, locks the store while it runs, and needs "
        "free disk as large as the store)\n";
  }
  return out;
}

std::string RetainJson(const RetainSummary& s, const RetainFlags& flags, const SpaceReport& space) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("horizon", rfc3339::FormatMs(s.horizon_ms)).Field("dry_run", s.dry_run);
  w.Key("removed").BeginObject();
  for (const RetainedKind kind : kRetainedKinds) {
    w.Key(RetainedKindName(kind)).Int(s.removed[static_cast<size_t>(kind)]);
  }
  w.EndObject().Key("transactions").Int(s.transactions).Key("archive");
  flags.archive.empty() ? w.Null() : w.String(flags.archive);
  w.Key("archived").Int(s.archived).Key("forgotten_digests");
  flags.forget_ledger_after.empty() ? w.Null() : w.Int(s.digests_forgotten);
  w.Field("cancelled", s.cancelled).Key("space");
  if (space.space.applies) {
    w.BeginObject().Key("file_bytes").Int(space.space.file_bytes);
    w.Key("free_bytes").Int(space.space.free_bytes).Field("incremental", space.space.incremental);
    w.Key("given_back_bytes").Int(space.given_back).EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
  out += "\n";
  return out;
}

Result<std::unique_ptr<RetentionArchive>> OpenArchive(const std::string& path) {
  if (path.empty()) return std::unique_ptr<RetentionArchive>();
  if (path == "-") return std::unique_ptr<RetentionArchive>(std::make_unique<StdoutArchive>());
  return OpenRetentionArchive(PosixEnv(), path);
}

int RunRetain(const RetainFlags& flags) {
  const auto fail = [](const Status& status) {
    std::cerr << "evident store retain: " << status.ToString() << "\n";
    return kExitUsage;
  };
  const Result<int64_t> older_than = ParseDurationMs(flags.older_than);
  if (!older_than.ok()) return fail(older_than.status());
  if (*older_than <= 0) return fail(Status::InvalidArgument("--older-than must be longer than 0"));
  int64_t forget_after_ms = 0;
  if (!flags.forget_ledger_after.empty()) {
    const Result<int64_t> forget = ParseDurationMs(flags.forget_ledger_after);
    if (!forget.ok()) return fail(forget.status());
    if (*forget < *older_than) {
      return fail(Status::InvalidArgument(
          "--forget-ledger-after must be at least --older-than: a receipt is kept as a digest "
          "before its digest can be forgotten"));
    }
    forget_after_ms = *forget;
  }
  auto store = OpenStore(flags.store, {.create = false});
  if (!store.ok()) return fail(store.status());
  auto archive = OpenArchive(flags.dry_run ? std::string() : flags.archive);
  if (!archive.ok()) return fail(archive.status());
  static CancelToken stop;
  InstallStopSignals(stop);
  const Result<RetainSummary> summary = Retain(**store,
                                               {.older_than_ms = *older_than,
                                                .dry_run = flags.dry_run,
                                                .batch_count_max = flags.batch_count_max,
                                                .yield_percent = flags.yield_percent,
                                                .cancel = &stop,
                                                .forget_ledger_after_ms = forget_after_ms},
                                               archive->get());
  const Status closed = *archive != nullptr ? (*archive)->Close() : Status::Ok();
  if (!summary.ok()) return fail(summary.status());
  if (!closed.ok()) return fail(closed);
  SpaceReport space;
  Result<Store::Space> before = (*store)->SpaceNow();
  if (!before.ok()) return fail(before.status());
  space.space = *before;
  if (!flags.dry_run && space.space.incremental) {
    const Result<int64_t> given = (*store)->ReturnSpace(flags.vacuum_pages_max);
    if (!given.ok()) return fail(given.status());
    space.given_back = *given;
  }
  const std::string report = flags.format == "json" ? RetainJson(*summary, flags, space)
                                                    : RetainText(*summary, flags, space);
  // With the archive on standard output, the report goes to standard error.
  if (flags.archive == "-") {
    std::cerr << report;
    return std::cerr.good() ? kExitOk : kExitUsage;
  }
  return WriteStdout(report) ? kExitOk : kExitUsage;
}

int RunVacuum(const std::string& uri) {
  auto store = OpenStore(uri, {.create = false});
  Status done = store.ok() ? (*store)->Compact() : store.status();
  Result<Store::Space> space = done.ok() ? (*store)->SpaceNow() : Result<Store::Space>(done);
  if (!space.ok()) {
    std::cerr << "evident store vacuum: " << space.status().ToString() << "\n";
    return kExitUsage;
  }
  return WriteStdout("store rewritten: " + Mib(space->file_bytes) +
                     ", free pages now given back by `evident store retain`\n")
             ? kExitOk
             : kExitUsage;
}

void AddRetainCommand(CLI::App& store, Runner& run) {
  auto flags = std::make_shared<RetainFlags>();
  CLI::App* cmd = store.add_subcommand(
      "retain",
      "Remove what is settled and older than a horizon: journal entries, closed quarantine "
      "records, closed gap records, the logs of settled effects, sent outbox rows, and applied "
      "receipts, whose keys stay as digests so a redelivery is still a duplicate (never "
      "projections or anything open), in small transactions, archiving each record first with "
      "--archive; then give the freed space back (SQLite). Exit 0 done, 2 refused or failed.");
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--older-than", flags->older_than,
                  "The horizon: what settled longer ago than this goes (30d, 12h, 90m)")
      ->required();
  cmd->add_option("--archive", flags->archive,
                  "Append each removed record as a JSON line to this file (- : standard output, "
                  "the report then goes to standard error), synced before its removal commits");
  cmd->add_option("--forget-ledger-after", flags->forget_ledger_after,
                  "Also drop the digests of receipts committed longer ago than this (at least "
                  "--older-than): a redelivery of such an event is then decided afresh (an "
                  "ordered consumer refuses it as stale; an unordered one may apply it again)");
  cmd->add_flag("--dry-run", flags->dry_run, "Count what would go; remove nothing");
  cmd->add_option("--batch-count-max", flags->batch_count_max, "Records per transaction")
      ->check(IntegerFrom(1, 100000));
  cmd->add_option("--yield-percent", flags->yield_percent,
                  "After each transaction, pause this percent of the time it took (default 100: "
                  "half the time left to the store's writers; 0: back to back)")
      ->check(IntegerFrom(0, 1000));
  cmd->add_option("--format", flags->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->callback([flags, &run] { run = [flags] { return RunRetain(*flags); }; });

  auto uri = std::make_shared<std::string>();
  CLI::App* vacuum = store.add_subcommand(
      "vacuum",
      "Rewrite a SQLite store once so that it holds no free page and gives the pages retention "
      "frees back from then on (a store created before layout 11 does not). It locks the store "
      "for its whole run and needs free disk as large as the store. Exit 0 done, 2 failed.");
  vacuum->add_option("--store", *uri, StoreHelp())->required();
  vacuum->callback([uri, &run] { run = [uri] { return RunVacuum(*uri); }; });
}

}  // namespace

void AddStoreCommands(CLI::App& app, Runner& run) {
  CLI::App* store =
      app.add_subcommand("store", "The store itself: its schema, its retention, its space.");
  store->require_subcommand(1);
  auto migrate = std::make_shared<MigrateFlags>();
  CLI::App* cmd = store->add_subcommand(
      "migrate",
      "Bring the store's tables to the layout this build writes (creating them when absent). "
      "A PostgreSQL store is migrated only by this command, once every process sharing it runs "
      "this build. Exit 0 done, 2 refused (a newer layout) or unreachable.");
  cmd->add_option("--store", migrate->store, StoreHelp())->required();
  cmd->callback([migrate, &run] { run = [migrate] { return RunMigrate(*migrate); }; });
  AddRetainCommand(*store, run);
  AddInstallFunctionsCommand(*store, run);
}

}  // namespace evident::cli
