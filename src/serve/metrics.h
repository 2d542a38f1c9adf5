// serve/metrics.h — the daemon's counters and histograms, written in the Prometheus text
// exposition format (version 0.0.4). Counters live in memory and start at zero with the
// process; the store's gauges (open gaps, quarantine, effects, outbox) are read off the request
// thread, at most once per interval, from a read-only handle of their own (each list counted up
// to kScrapeRowsMax rows), and a scrape serves the last reading with its age: a scrape never
// reads the store, so scrapers cannot hold up intake.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "evident/consumer.h"
#include "evident/store.h"

namespace evident::serve {

inline constexpr int64_t kScrapeRowsMax = 100'000;

// The operator page's charts (GET /metrics/history): one point per store reading, kept for the
// last hour and at most kHistoryPointsMax of them (an hour at the default 5 s interval; a
// shorter interval keeps a shorter stretch), so the daemon's memory for them is bounded.
inline constexpr size_t kHistoryPointsMax = 720;
inline constexpr int64_t kHistoryWindowMs = 3'600'000;

struct HistoryPoint {
  int64_t at_ms = 0;
  int64_t interval_ms = 0;                   // since the point before; 0 for the first
  std::map<std::string, int64_t> decisions;  // by outcome, decided in that interval
  int64_t intake_backlog = 0;                // events received, not yet decided: the lag
  bool store_up = false;                     // the store's figures below were read
  int64_t open_gaps = 0;
  int64_t overdue_gaps = 0;
  int64_t quarantine_open = 0;
  int64_t outbox_pending = 0;
  int64_t outbox_oldest_age_ms = 0;  // 0 when nothing is pending
};

// What one reading of the store found (the store part of /metrics, and a history point's).
struct StoreGauges {
  int64_t open_gaps = 0;
  int64_t overdue_gaps = 0;
  std::map<std::string, int64_t> quarantine;  // by status
  std::map<std::string, int64_t> effects;     // by state
  int64_t outbox_pending = 0;
  int64_t outbox_parked = 0;
  int64_t outbox_oldest_age_ms = 0;
};

class Metrics {
 public:
  void CountBatch(const CommittedBatch& batch);
  void CountRequest(int status);
  void CountSignatureFailure(std::string_view reason);
  void CountRestart();
  void SetQueue(int64_t events, int64_t outstanding_requests);

  // Reads the store's gauges from `reader` (its exposition text) and keeps them for the
  // scrapes that follow; a failing read, or no reader (the store could not be opened), is kept
  // as evident_store_up 0. Returns whether the read worked. Called by the gauges' own thread
  // (Daemon), never by a scrape.
  bool ReadStoreGauges(Store* reader, int64_t now_ms);

  // The whole exposition: the counters, then the last store reading with its age (none before
  // the first: the store part is left out).
  std::string Render(int64_t now_ms) const;

  // The history as JSON: {"window_ms", "points_max", "points": [{"at_ms", "interval_ms",
  // "decisions": {OUTCOME: n}, "intake_backlog", "store_up", "open_gaps", "overdue_gaps",
  // "quarantine_open", "outbox_pending", "outbox_oldest_age_ms"}]}, oldest first.
  std::string RenderHistory() const;

 private:
  // Upper bounds of the buckets; +Inf is implied.
  static constexpr std::array<double, 12> kCommitBuckets = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                                            0.05,   0.1,   0.2,   0.5,   1,    5};
  static constexpr std::array<double, 11> kBatchBuckets = {1,   2,   5,   10,   20,  50,
                                                           100, 200, 500, 1000, 5000};
  template <size_t N>
  struct Histogram {
    std::array<int64_t, N + 1> counts{};  // per bucket, not cumulative; the last is +Inf
    double sum = 0;
    int64_t count = 0;
    void Observe(const std::array<double, N>& bounds, double value);
    void Render(std::string& out, std::string_view name, const std::array<double, N>& bounds) const;
  };

  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> decisions_;
  std::map<int, int64_t> requests_;
  std::map<std::string, int64_t> signature_failures_;
  Histogram<kCommitBuckets.size()> commit_seconds_;
  Histogram<kBatchBuckets.size()> batch_events_;
  int64_t restarts_ = 0, queue_events_ = 0, outstanding_ = 0;
  // Adds the point of a reading at `now_ms` (mu_ held).
  void AddHistoryPoint(int64_t now_ms, bool up, const StoreGauges& gauges);

  // The last store reading: its text (empty when it failed), whether it succeeded, and when.
  std::string store_text_;
  bool store_up_ = false;
  int64_t store_read_at_ms_ = -1;  // -1: not read yet
  std::deque<HistoryPoint> history_;
  std::map<std::string, int64_t> decided_at_last_point_;  // by outcome, since the start
};

}  // namespace evident::serve
