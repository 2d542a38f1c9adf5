// The configuration's retention (evident/retention.h): one run per distinct horizon, and the
// timer that runs them beside a long-running command.
#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <utility>

#include "evident/retention.h"
#include "evident/retry.h"

namespace evident {

Result<std::vector<RetainSummary>> RetainAsConfigured(Store& store, const RetentionConfig& config,
                                                      RetentionArchive* archive, Clock* clock,
                                                      const CancelToken* cancel) {
  std::map<int64_t, std::vector<RetainedKind>> by_horizon;  // shortest horizon first
  for (const RetainedKind kind : kRetainedKinds) {
    const int64_t older_than_ms = config.older_than_ms[static_cast<size_t>(kind)];
    if (older_than_ms > 0) by_horizon[older_than_ms].push_back(kind);
  }
  Clock& time = clock != nullptr ? *clock : SystemClock();
  std::vector<RetainSummary> summaries;
  int64_t last_started_ms = std::numeric_limits<int64_t>::min();
  for (auto& [older_than_ms, kinds] : by_horizon) {
    // Digests are forgotten after the run of the ledger's horizon.
    const bool ledger = std::find(kinds.begin(), kinds.end(), RetainedKind::kLedger) != kinds.end();
    const int64_t forget_ms = ledger ? config.forget_ledger_after_ms : 0;
    // A store keeps a run by its start time: each horizon's run starts in a millisecond of its
    // own, so that none overwrites the one before it (the longest horizon's run comes last).
    // Bounded: a wall clock set back would otherwise hold retention until it caught up.
    for (int waited = 0; waited < 10 && time.NowMs() <= last_started_ms; ++waited) {
      time.SleepMs(1);
    }
    EVIDENT_ASSIGN_OR_RETURN(RetainSummary summary,
                             Retain(store,
                                    {.older_than_ms = older_than_ms,
                                     .batch_count_max = config.batch_count_max,
                                     .yield_percent = config.yield_percent,
                                     .clock = clock,
                                     .cancel = cancel,
                                     .kinds = kinds,
                                     .forget_ledger_after_ms = forget_ms},
                                    archive));
    last_started_ms = summary.horizon_ms + older_than_ms;  // the start Retain recorded
    summaries.push_back(summary);
    if (summary.cancelled) break;
  }
  return summaries;
}

namespace {

// "12 (journal 10, outbox 2)": what the runs removed, by kind.
std::string RemovedText(const std::vector<RetainSummary>& summaries, int64_t& total) {
  std::array<int64_t, kRetainedKindCount> removed{};
  total = 0;
  for (const RetainSummary& summary : summaries) {
    for (size_t k = 0; k < kRetainedKindCount; ++k) removed[k] += summary.removed[k];
    total += summary.total();
  }
  std::string text = std::to_string(total) + " (";
  bool first = true;
  for (const RetainedKind kind : kRetainedKinds) {
    const int64_t n = removed[static_cast<size_t>(kind)];
    if (n == 0) continue;
    text += (first ? "" : ", ") + std::string(RetainedKindName(kind)) + " " + std::to_string(n);
    first = false;
  }
  return text + ")";
}

// "15m", "2h", "1500ms": the largest unit that divides it.
std::string DurationText(int64_t ms) {
  for (const auto& [unit, scale] : {std::pair<const char*, int64_t>{"d", 86'400'000},
                                    {"h", 3'600'000},
                                    {"m", 60'000},
                                    {"s", 1000}}) {
    if (ms % scale == 0) return std::to_string(ms / scale) + unit;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace

RetentionTimer::RetentionTimer(RetentionTimerOptions options) : options_(std::move(options)) {
  assert(options_.config.every_ms > 0 && options_.open_store);
  thread_ = std::thread([this] { Loop(); });
}

RetentionTimer::~RetentionTimer() { Stop(); }

void RetentionTimer::Stop() {
  stop_.Cancel();
  if (thread_.joinable()) thread_.join();
}

RetentionTimer::Counts RetentionTimer::counts() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void RetentionTimer::Loop() {
  Clock& clock = options_.clock != nullptr ? *options_.clock : SystemClock();
  std::unique_ptr<Store> store;
  do {
    const Status ran = RunOnce(store);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++counts_.runs;
      if (!ran.ok()) ++counts_.failures;
    }
    if (!ran.ok()) {
      store.reset();  // opened again at the next run: the failure may have been the store's
      if (options_.log != nullptr) {
        std::fprintf(options_.log, "evident %s: retention run failed, tried again in %s: %s\n",
                     options_.command.c_str(), DurationText(options_.config.every_ms).c_str(),
                     ran.ToString().c_str());
        std::fflush(options_.log);  // a log line: nothing to do if it cannot be written
      }
    }
  } while (SleepUnlessCancelled(clock, options_.config.every_ms, &stop_));
}

// One run: the store opened when it is not, the archive opened for the run and closed after it,
// the freed space given back; says what it removed when it removed anything.
Status RetentionTimer::RunOnce(std::unique_ptr<Store>& store) {
  if (store == nullptr) {
    EVIDENT_ASSIGN_OR_RETURN(store, options_.open_store());
  }
  std::unique_ptr<RetentionArchive> archive;
  if (!options_.config.archive.empty()) {
    Env& env = options_.env != nullptr ? *options_.env : PosixEnv();
    EVIDENT_ASSIGN_OR_RETURN(archive, OpenRetentionArchive(env, options_.config.archive));
  }
  const Result<std::vector<RetainSummary>> summaries =
      RetainAsConfigured(*store, options_.config, archive.get(), options_.clock, &stop_);
  const Status closed = archive != nullptr ? archive->Close() : Status::Ok();
  EVIDENT_RETURN_IF_ERROR(summaries.status());
  EVIDENT_RETURN_IF_ERROR(closed);
  EVIDENT_ASSIGN_OR_RETURN(const Store::Space space, store->SpaceNow());
  if (space.incremental && !stop_.cancelled()) {  // a stop does not wait for the vacuum
    // In steps, so that a stop does not wait for the rest.
    constexpr int64_t kPagesPerStep = 2048;
    for (int64_t given_pages = 0; given_pages < options_.vacuum_pages_max && !stop_.cancelled();
         given_pages += kPagesPerStep) {
      EVIDENT_ASSIGN_OR_RETURN(const int64_t bytes, store->ReturnSpace(kPagesPerStep));
      if (bytes == 0) break;
    }
  }
  int64_t total = 0, forgotten = 0;
  const std::string removed = RemovedText(*summaries, total);
  for (const RetainSummary& summary : *summaries) forgotten += summary.digests_forgotten;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    counts_.removed += total;
  }
  if ((total > 0 || forgotten > 0) && options_.log != nullptr) {
    const std::string archived =
        archive != nullptr ? ", archived first to " + archive->name() : std::string();
    const std::string forgot =
        forgotten > 0 ? "; forgot " + std::to_string(forgotten) + " ledger digest(s)" : "";
    std::fprintf(options_.log, "evident %s: retention removed %s%s%s\n", options_.command.c_str(),
                 removed.c_str(), archived.c_str(), forgot.c_str());
    std::fflush(options_.log);  // a log line: nothing to do if it cannot be written
  }
  return Status::Ok();
}

}  // namespace evident
