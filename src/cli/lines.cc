// cli/lines.cc — reading input line by line with a bound on the line kept.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <istream>

#include "cli/commands.h"
#include "evident/progress.h"
#include "evident/registry.h"
#include "evident/retention.h"

namespace evident::cli {

// Reads one line into `line`, keeping at most `bytes_max` + 1 of its bytes (enough to tell it
// is too long) and skipping the rest, so that one huge line never sits in memory whole. False
// at the end of the input. (std::getline has no bound.)
bool ReadLineBounded(std::istream& in, std::string& line, size_t bytes_max) {
  line.clear();
  char chunk[1 << 16];
  bool any = false;
  while (true) {
    in.getline(chunk, sizeof chunk);
    const auto extracted = static_cast<size_t>(in.gcount());
    // A chunk filled up before the line ended: failbit without eofbit, no newline taken.
    const bool more = in.fail() && !in.eof() && extracted == sizeof chunk - 1;
    const bool newline_taken = !in.fail() && !in.eof() && extracted > 0;
    const size_t stored = newline_taken ? extracted - 1 : extracted;
    any = any || extracted > 0;
    if (line.size() <= bytes_max) line.append(chunk, std::min(stored, bytes_max + 1 - line.size()));
    if (!more) return any;
    in.clear();
  }
}

void NoteTerminalInput(const std::string& path, std::string_view command) {
  if (path != "-" || isatty(STDIN_FILENO) == 0) return;
  std::fprintf(stderr,
               "evident %.*s: reading standard input, which is a terminal: type or paste one "
               "event per line and end with Ctrl-D, or name a file (see --help)\n",
               static_cast<int>(command.size()), command.data());
}

bool WriteStdout(std::string_view text) {
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
}

CLI::Validator IntegerFrom(int64_t min, int64_t max) {
  const std::string range =
      "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || ptr != end || value < min || value > max) {
          return "must be " + range + ", not '" + text + "'";
        }
        return "";
      },
      "INT in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

CLI::Validator SecondsUpTo(double max) {
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.0f", max);
  const std::string range = std::string("a number of seconds from 0 to ") + bound;
  return CLI::Validator(
      [max, range](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno != 0 ||
            !std::isfinite(value) || value < 0 || value > max) {
          return "must be " + range + ", not '" + text + "'";
        }
        return "";
      },
      "SECONDS");
}

CLI::Validator JsonPointer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return IsValidJsonPointer(text)
                   ? ""
                   : "must be a JSON Pointer (\"/a/b\", RFC 6901), not '" + text + "'";
      },
      "POINTER");
}

void AddFormatOption(CLI::App& command, std::string& format) {
  command.add_option("--format", format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void AddProgressOption(CLI::App& command, std::string& mode) {
  command
      .add_option("--progress", mode,
                  "A progress line on standard error (a bar with the percentage, the rate and the "
                  "time left when the input's size is known): auto (when it is a terminal), "
                  "always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

std::FILE* ProgressFile(const std::string& mode) {
  const Result<ProgressMode> parsed = ParseProgressMode(mode);
  return ProgressOutput(parsed.ok() ? *parsed : ProgressMode::kNever);
}

Result<std::unique_ptr<WritableFile>> OpenOutputFile(const std::string& path, bool append) {
  if (path == "-") return WritableFileOnDescriptor(STDOUT_FILENO, "standard output");
  return append ? PosixEnv().NewAppendableFile(path) : PosixEnv().NewWritableFile(path);
}

std::istream* OpenInput(const std::string& path, std::ifstream& file) {
  if (path == "-") return &std::cin;
  file.open(path, std::ios::binary);
  return file ? &file : nullptr;
}

namespace {

// True when `a` and `b` name one file: the same inode when both exist, else the same absolute
// path once normalised.
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  namespace fs = std::filesystem;
  return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
}

// True when `path` lies below the directory `dir` (symbolic links resolved where they exist).
bool Below(const std::string& path, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path inner = fs::weakly_canonical(fs::absolute(path), error);
  if (error) return false;
  const fs::path outer = fs::weakly_canonical(fs::absolute(dir), error);
  if (error) return false;
  const auto [end, rest] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return end == outer.end() && rest != inner.end();
}

}  // namespace

void AddConfigReads(const Config& config, ReadPaths& reads) {
  if (!config.path.empty()) reads.emplace_back(config.path, "the config");
  if (!config.profile_file.empty())
    reads.emplace_back(config.profile_file, "the config's profile file");
  if (!config.contracts_dir.empty()) {
    reads.emplace_back(config.contracts_dir, "the contracts directory");
  }
}

std::string StoreHelp() { return "Store: " + BackendUsages(BackendRole::kStore); }

void AddStoreReads(const std::string& store_uri, ReadPaths& reads) {
  for (std::string& path : StoreFiles(store_uri)) reads.emplace_back(std::move(path), "the store");
}

std::string OutputClash(std::string_view option, const std::string& output,
                        const ReadPaths& reads) {
  for (const auto& [path, what] : reads) {
    if (path.empty() || path == "-") continue;
    std::error_code error;
    const bool directory = std::filesystem::is_directory(path, error);
    if (SameFile(output, path) || (directory && Below(output, path))) {
      return std::string(option) + " " + output + " is " + (directory ? "in " : "") + what + " (" +
             path + "); writing there would destroy it";
    }
  }
  return "";
}

void AddOtlpOption(CLI::App& command, std::string& endpoint) {
  command.add_option("--otlp-endpoint", endpoint,
                     "Export a span per decision batch, relay batch and effect attempt to this "
                     "OTLP/HTTP collector (URL; spans go to URL/v1/traces); overrides the "
                     "config's tracing.otlp_endpoint");
}

Result<std::unique_ptr<OtlpTracer>> OpenTracer(const std::string& endpoint, const Config* config) {
  OtlpOptions options;
  options.endpoint = endpoint;
  if (config != nullptr) {
    if (options.endpoint.empty()) options.endpoint = config->tracing.otlp_endpoint;
    options.service_name = config->tracing.service_name;
  }
  if (options.endpoint.empty()) return std::unique_ptr<OtlpTracer>();
  return OtlpTracer::Open(std::move(options));
}

void CloseTracer(std::unique_ptr<OtlpTracer> tracer, std::string_view command) {
  if (tracer == nullptr) return;
  tracer->Close();  // what is queued, for at most OtlpOptions::close_ms_max
  const OtlpStats stats = tracer->stats();
  if (stats.failed > 0 || stats.dropped > 0) {
    std::cerr << "evident " << command << ": " << stats.exported << " span(s) exported, "
              << stats.failed << " not accepted by the collector"
              << (stats.last_error.empty() ? "" : " (" + stats.last_error + ")") << ", "
              << stats.dropped << " dropped (queue full)\n";
  }
}

std::unique_ptr<RetentionTimer> StartRetention(
    const RetentionConfig& retention, std::function<Result<std::unique_ptr<Store>>()> open_store,
    std::string command) {
  if (retention.every_ms <= 0) return nullptr;
  return std::make_unique<RetentionTimer>(RetentionTimerOptions{.config = retention,
                                                                .open_store = std::move(open_store),
                                                                .log = stderr,
                                                                .command = std::move(command)});
}

}  // namespace evident::cli
