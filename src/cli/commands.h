// cli/commands.h — how each `evident` subcommand plugs into the command line.
//
// Every subcommand lives in its own cmd_<name>.cc and exposes one Add*Command function. It adds a
// CLI11 subcommand to `app` and, when that subcommand is chosen, stores in `run` the function
// that does the work and returns the process exit code. Exit codes across the tool: 0 success,
// 1 a negative answer about the input (rejected, invalid, incompatible, denied), 2 usage or I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/config.h"
#include "evident/duration.h"
#include "evident/env.h"
#include "evident/profile.h"
#include "evident/status.h"
#include "evident/tracing.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace evident {
class RetentionTimer;
class Store;
}  // namespace evident

namespace evident::cli {

using Runner = std::function<int()>;

inline constexpr int kExitOk = 0;
inline constexpr int kExitNegative = 1;
inline constexpr int kExitUsage = 2;
// Everything was decided and committed, but the broker's side is not confirmed: it was not told
// of every decision (its connection was down at the end; it delivers those messages again, and
// the ledger answers them duplicate), or it was unreachable for as long as --until-idle (the
// stream may hold messages the run did not read).
inline constexpr int kExitUnacknowledged = 3;

// Reads one line (without its newline) into `line`, keeping at most `bytes_max` + 1 of its bytes
// (enough to tell it is too long) and skipping the rest, so that one huge line never sits in
// memory whole. False at the end of the input (cli/lines.cc).
bool ReadLineBounded(std::istream& in, std::string& line, size_t bytes_max);
// The input named `path`: standard input for "-", else `file` opened on it; null when it cannot
// be opened (cli/lines.cc).
std::istream* OpenInput(const std::string& path, std::ifstream& file);
// An output such as --outcomes: standard output for "-" (its descriptor: Close flushes and
// leaves it open), else the file at `path` through the posix Env, truncated or appended to.
Result<std::unique_ptr<WritableFile>> OpenOutputFile(const std::string& path, bool append);

// When `path` is "-" and standard input is a terminal, says on standard error that `command`
// reads it (type or paste, end with Ctrl-D) and how to name a file instead, rather than waiting
// without a word (cli/lines.cc).
void NoteTerminalInput(const std::string& path, std::string_view command);

// Writes `text` to standard output whole; false (with errno set) when it could not, so a long
// stream stops at the first failed write instead of running on to a misleading exit 0
// (cli/lines.cc). main() checks the final flush and close as well.
bool WriteStdout(std::string_view text);

// A CLI11 check that an option is a whole number from `min` to `max`, with a message that says
// so in those words (CLI11's own range check prints doubles: "0.000000 to 1.797e308").
CLI::Validator IntegerFrom(int64_t min, int64_t max);
// A CLI11 check that an option is a number of seconds from 0 to `max` (NaN and infinities are
// refused: CLI11's Range lets NaN through).
CLI::Validator SecondsUpTo(double max);
// A CLI11 check that an option is a JSON Pointer (RFC 6901: empty, or "/" and tokens).
CLI::Validator JsonPointer();

// What a run reads, by path, each with what it is ("the config"): a file a run writes must be
// none of them (OutputClash).
using ReadPaths = std::vector<std::pair<std::string, std::string>>;
// Adds the files a run under `config` reads: the config file, its profile file, and its
// contracts directory (every path below it).
void AddConfigReads(const Config& config, ReadPaths& reads);
// Adds the files the store `store_uri` keeps on this machine (StoreFiles, registry.h: SQLite's
// database and its -wal, -shm and -journal); other stores are no file.
void AddStoreReads(const std::string& store_uri, ReadPaths& reads);
// Opening `output` for writing truncates it: empty when it names none of `reads` (nor a path
// below a directory among them), else a message for `option` that says which it is. Checked
// before anything is opened (cli/lines.cc).
std::string OutputClash(std::string_view option, const std::string& output, const ReadPaths& reads);

// "Store: sqlite:PATH, memory:NAME, ...": every store scheme built in (registry.h), for --store.
std::string StoreHelp();

// Adds `--format text|json` (default: the value `format` holds) to `command` (cli/lines.cc).
void AddFormatOption(CLI::App& command, std::string& format);
// --progress auto|always|never (ProgressMode): a progress line on standard error.
void AddProgressOption(CLI::App& command, std::string& mode);
// Where --progress `mode` (checked by AddProgressOption) writes: standard error, or null.
std::FILE* ProgressFile(const std::string& mode);

// Adds --otlp-endpoint URL to `command`: spans of the run over OTLP/HTTP (evident/tracing.h).
void AddOtlpOption(CLI::App& command, std::string& endpoint);
// The run's span exporter: --otlp-endpoint `endpoint` when given, else the configuration's
// `tracing.otlp_endpoint` (`config` may be null); null when neither names one.
Result<std::unique_ptr<OtlpTracer>> OpenTracer(const std::string& endpoint, const Config* config);

// The configuration's `retention:` run beside a long-running `command` (retention.h
// RetentionTimer), on stores `open_store` opens, saying what it removed on standard error; null
// when the configuration has no `retention:`.
std::unique_ptr<RetentionTimer> StartRetention(
    const RetentionConfig& retention, std::function<Result<std::unique_ptr<Store>>()> open_store,
    std::string command);
// Sends what `tracer` still holds and says on standard error what it could not export (spans
// are best effort: the run's exit code does not change). Null: nothing.
void CloseTracer(std::unique_ptr<OtlpTracer> tracer, std::string_view command);

// The envelope profile the flags name: a built-in `name` or a JSON `profile_file`, with the
// schema version read at `schema_version_at` when given (cmd_validate.cc).
Result<Profile> ChooseProfile(const std::string& name, const std::string& profile_file,
                              const std::string& schema_version_at);

// The subcommand `name` of `app`, added with `help` when no command file added it yet: several
// files add commands under one (cmd_schema_check.cc).
CLI::App* SharedSubcommand(CLI::App& app, const std::string& name, const std::string& help);
inline constexpr const char* kContractsHelp =
    "Contracts: lint, impact, and the sets kept in a store (push, list, show)";

void AddValidateCommand(CLI::App& app, Runner& run);
void AddSchemaCommand(CLI::App& app, Runner& run);
void AddConsumeCommand(CLI::App& app, Runner& run);
void AddEvidenceCommands(CLI::App& app, Runner& run);  // evidence, gaps, guard
// `schema check`, `contracts lint`, `contracts impact` (cmd_schema_check.cc).
void AddContractEvolutionCommands(CLI::App& app, Runner& run);
// `contracts push|list|show`: contracts kept in a store (cmd_contracts.cc).
void AddContractStoreCommands(CLI::App& app, Runner& run);
void AddConsumerStoreCommands(CLI::App& app, Runner& run);
// `outbox append|stats|list` (cmd_outbox.cc).
void AddOutboxCommands(CLI::App& app, Runner& run);
void AddRelayCommand(CLI::App& app, Runner& run);
// `quarantine list|show|replay|discard` (cmd_quarantine.cc).
void AddQuarantineCommands(CLI::App& app, Runner& run);
// `baseline import` (cmd_baseline.cc).
void AddBaselineCommands(CLI::App& app, Runner& run);
void AddProjectionCommands(CLI::App& app, Runner& run);
void AddReplayRequestsCommands(CLI::App& app, Runner& run);
// `store migrate` (cmd_store.cc).
void AddStoreCommands(CLI::App& app, Runner& run);
void AddGroupCommands(CLI::App& app, Runner& run);  // group status
// `effects run|list|show|resolve` and `compensations list` (cmd_effects.cc).
void AddEffectsCommands(CLI::App& app, Runner& run);
void AddServeCommand(CLI::App& app, Runner& run);
void AddConfigCommands(CLI::App& app, Runner& run);  // config check, config schema

}  // namespace evident::cli
