#include "serve/metrics.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

#include "evident/evidence.h"
#include "evident/outbox.h"
#include "evident/outcome.h"
#include "json/writer.h"

namespace evident::serve {
namespace {

// A label value with \, " and newline escaped as the format asks.
void AppendLabel(std::string& out, std::string_view name, std::string_view value, bool first) {
  if (!first) out.push_back(',');
  out.append(name);
  out.append("=\"");
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void AppendNumber(std::string& out, double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  out.append(text);
}

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
  out.append(name).append(" ").append(type).append("\n");
}

void Sample(std::string& out, std::string_view name, int64_t value) {
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

// Counts `rows` up to kScrapeRowsMax: the list is read once per scrape.
template <typename List>
Result<int64_t> CountRows(List list) {
  auto rows = list(kScrapeRowsMax);
  if (!rows.ok()) return rows.status();
  return static_cast<int64_t>(rows->rows.size());
}

// One reading of the store's figures, each list counted up to kScrapeRowsMax rows.
Result<StoreGauges> ReadGauges(Snapshot& snapshot, int64_t now_ms) {
  StoreGauges g;
  // An open gap is a (consumer, subject) with deferred events waiting for a missing version.
  EVIDENT_ASSIGN_OR_RETURN(Gaps gaps, ReadGaps(snapshot, kScrapeRowsMax));
  g.open_gaps = static_cast<int64_t>(gaps.gaps.size());
  for (const Gap& gap : gaps.gaps) g.overdue_gaps += gap.deadline_at_ms < now_ms ? 1 : 0;
  for (QuarantineStatus status :
       {QuarantineStatus::kOpen, QuarantineStatus::kReplayed, QuarantineStatus::kDiscarded}) {
    EVIDENT_ASSIGN_OR_RETURN(g.quarantine[std::string(QuarantineStatusName(status))],
                             CountRows([&](int64_t rows_max) {
                               return snapshot.ListQuarantine({.status = status}, {}, rows_max);
                             }));
  }
  for (int i = 0; i < kEffectStateCount; ++i) {
    const auto state = static_cast<EffectState>(i);
    EVIDENT_ASSIGN_OR_RETURN(g.effects[std::string(EffectStateName(state))],
                             CountRows([&](int64_t rows_max) {
                               return snapshot.ListIntents({.state = state}, 0, rows_max);
                             }));
  }
  EVIDENT_ASSIGN_OR_RETURN(OutboxStats outbox, snapshot.OutboxStatsNow(now_ms));
  g.outbox_pending = outbox.pending;
  g.outbox_parked = outbox.parked;
  g.outbox_oldest_age_ms = outbox.oldest_pending_age_ms.value_or(0);
  return g;
}

void RenderStore(std::string& out, const StoreGauges& g) {
  Header(out, "evident_open_gaps", "gauge",
         "Subjects waiting for a missing version (over the first 100000 deferred events).");
  Sample(out, "evident_open_gaps", g.open_gaps);
  Header(out, "evident_overdue_gaps", "gauge", "Open gaps past their deadline.");
  Sample(out, "evident_overdue_gaps", g.overdue_gaps);
  Header(out, "evident_quarantine_records", "gauge", "Quarantine records by status.");
  for (QuarantineStatus status :
       {QuarantineStatus::kOpen, QuarantineStatus::kReplayed, QuarantineStatus::kDiscarded}) {
    const std::string name(QuarantineStatusName(status));
    out.append("evident_quarantine_records{");
    AppendLabel(out, "status", name, true);
    out.append("} ").append(std::to_string(g.quarantine.at(name))).append("\n");
  }
  Header(out, "evident_effects", "gauge", "Effect intents by state.");
  for (int i = 0; i < kEffectStateCount; ++i) {
    const std::string name(EffectStateName(static_cast<EffectState>(i)));
    out.append("evident_effects{");
    AppendLabel(out, "state", name, true);
    out.append("} ").append(std::to_string(g.effects.at(name))).append("\n");
  }
  Header(out, "evident_outbox_pending", "gauge", "Outbox rows not yet sent.");
  Sample(out, "evident_outbox_pending", g.outbox_pending);
  Header(out, "evident_outbox_parked", "gauge",
         "Outbox rows an operator set aside (evident outbox park).");
  Sample(out, "evident_outbox_parked", g.outbox_parked);
  Header(out, "evident_relay_lag_seconds", "gauge",
         "Age of the oldest unsent outbox row (0 when none).");
  out.append("evident_relay_lag_seconds ");
  AppendNumber(out, static_cast<double>(g.outbox_oldest_age_ms) / 1000.0);
  out.push_back('\n');
}

}  // namespace

template <size_t N>
void Metrics::Histogram<N>::Observe(const std::array<double, N>& bounds, double value) {
  size_t bucket = 0;
  while (bucket < N && value > bounds[bucket]) ++bucket;
  ++counts[bucket];
  sum += value;
  ++count;
}

template <size_t N>
void Metrics::Histogram<N>::Render(std::string& out, std::string_view name,
                                   const std::array<double, N>& bounds) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= N; ++i) {
    cumulative += counts[i];
    out.append(name).append("_bucket{le=\"");
    if (i < N) {
      AppendNumber(out, bounds[i]);
    } else {
      out.append("+Inf");
    }
    out.append("\"} ").append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum ");
  AppendNumber(out, sum);
  out.append("\n").append(name).append("_count ").append(std::to_string(count)).append("\n");
}

void Metrics::CountBatch(const CommittedBatch& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Decision& d : batch.decisions) {
    ++decisions_[{d.consumer, std::string(OutcomeName(d.outcome)), d.reason}];
  }
  commit_seconds_.Observe(kCommitBuckets, batch.commit_seconds);
  batch_events_.Observe(kBatchBuckets, static_cast<double>(batch.events));
}

void Metrics::CountRequest(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[status];
}

void Metrics::CountSignatureFailure(std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++signature_failures_[std::string(reason)];
}

void Metrics::CountRestart() {
  std::lock_guard<std::mutex> lock(mu_);
  ++restarts_;
}

void Metrics::SetQueue(int64_t events, int64_t outstanding_requests) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_events_ = events;
  outstanding_ = outstanding_requests;
}

bool Metrics::ReadStoreGauges(Store* reader, int64_t now_ms) {
  std::string text;
  StoreGauges gauges;
  bool up = false;
  if (reader != nullptr) {
    Result<std::unique_ptr<Snapshot>> snapshot = reader->Read();
    if (snapshot.ok()) {
      Result<StoreGauges> read = ReadGauges(**snapshot, now_ms);
      up = read.ok();
      if (up) gauges = std::move(read).value();
    }
  }
  if (up) RenderStore(text, gauges);
  std::lock_guard<std::mutex> lock(mu_);
  store_text_ = std::move(text);
  store_up_ = up;
  store_read_at_ms_ = now_ms;
  AddHistoryPoint(now_ms, up, gauges);
  return up;
}

void Metrics::AddHistoryPoint(int64_t now_ms, bool up, const StoreGauges& gauges) {
  HistoryPoint point{.at_ms = now_ms,
                     .interval_ms = history_.empty() ? 0 : now_ms - history_.back().at_ms,
                     .intake_backlog = queue_events_,
                     .store_up = up};
  std::map<std::string, int64_t> decided;
  for (const auto& [key, n] : decisions_) decided[std::get<1>(key)] += n;
  for (const auto& [outcome, n] : decided) {
    const int64_t in_interval = n - decided_at_last_point_[outcome];
    if (in_interval > 0) point.decisions[outcome] = in_interval;
  }
  decided_at_last_point_ = std::move(decided);
  if (up) {
    point.open_gaps = gauges.open_gaps;
    point.overdue_gaps = gauges.overdue_gaps;
    const auto open = gauges.quarantine.find("open");
    point.quarantine_open = open == gauges.quarantine.end() ? 0 : open->second;
    point.outbox_pending = gauges.outbox_pending;
    point.outbox_oldest_age_ms = gauges.outbox_oldest_age_ms;
  }
  history_.push_back(std::move(point));
  while (history_.size() > kHistoryPointsMax ||
         history_.front().at_ms < now_ms - kHistoryWindowMs) {
    history_.pop_front();
  }
  assert(!history_.empty() && history_.size() <= kHistoryPointsMax);
}

std::string Metrics::RenderHistory() const {
  std::string text;
  json::Writer out(text);
  out.BeginObject()
      .Field("window_ms", kHistoryWindowMs)
      .Field("points_max", static_cast<int64_t>(kHistoryPointsMax))
      .Key("points")
      .BeginArray();
  std::lock_guard<std::mutex> lock(mu_);
  for (const HistoryPoint& p : history_) {
    out.BeginObject().Field("at_ms", p.at_ms).Field("interval_ms", p.interval_ms);
    out.Key("decisions").BeginObject();
    for (const auto& [outcome, n] : p.decisions) out.Field(outcome, n);
    out.EndObject()
        .Field("intake_backlog", p.intake_backlog)
        .Field("store_up", p.store_up)
        .Field("open_gaps", p.open_gaps)
        .Field("overdue_gaps", p.overdue_gaps)
        .Field("quarantine_open", p.quarantine_open)
        .Field("outbox_pending", p.outbox_pending)
        .Field("outbox_oldest_age_ms", p.outbox_oldest_age_ms)
        .EndObject();
  }
  out.EndArray().EndObject();
  return text;
}

std::string Metrics::Render(int64_t now_ms) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Header(out, "evident_decisions_total", "counter",
           "Decisions by consumer, outcome and reason (empty: none).");
    for (const auto& [key, n] : decisions_) {
      out.append("evident_decisions_total{");
      AppendLabel(out, "consumer", std::get<0>(key), true);
      AppendLabel(out, "outcome", std::get<1>(key), false);
      AppendLabel(out, "reason", std::get<2>(key), false);
      out.append("} ").append(std::to_string(n)).append("\n");
    }
    Header(out, "evident_commit_seconds", "histogram", "Store commit time of a batch.");
    commit_seconds_.Render(out, "evident_commit_seconds", kCommitBuckets);
    Header(out, "evident_batch_events", "histogram", "Events decided per committed batch.");
    batch_events_.Render(out, "evident_batch_events", kBatchBuckets);
    Header(out, "evident_http_requests_total", "counter", "HTTP requests answered, by status.");
    for (const auto& [status, n] : requests_) {
      out.append("evident_http_requests_total{");
      AppendLabel(out, "status", std::to_string(status), true);
      out.append("} ").append(std::to_string(n)).append("\n");
    }
    Header(out, "evident_webhook_signature_failures_total", "counter",
           "Requests refused for their webhook signature, by reason.");
    for (const auto& [reason, n] : signature_failures_) {
      out.append("evident_webhook_signature_failures_total{");
      AppendLabel(out, "reason", reason, true);
      out.append("} ").append(std::to_string(n)).append("\n");
    }
    Header(out, "evident_loop_restarts_total", "counter",
           "Runs of the consume loop that failed and were started again.");
    Sample(out, "evident_loop_restarts_total", restarts_);
    Header(out, "evident_queue_events", "gauge", "Events received and not yet decided.");
    Sample(out, "evident_queue_events", queue_events_);
    Header(out, "evident_requests_waiting", "gauge", "Requests waiting for their commit.");
    Sample(out, "evident_requests_waiting", outstanding_);
    if (store_read_at_ms_ < 0) return out;
    Header(out, "evident_store_up", "gauge", "1 when the store answered its last reading.");
    Sample(out, "evident_store_up", store_up_ ? 1 : 0);
    Header(out, "evident_store_gauges_age_seconds", "gauge",
           "Age of the store gauges below: they are read at most once per interval.");
    out.append("evident_store_gauges_age_seconds ");
    AppendNumber(out,
                 static_cast<double>(std::max<int64_t>(0, now_ms - store_read_at_ms_)) / 1000.0);
    out.push_back('\n');
    out.append(store_text_);
  }
  return out;
}

}  // namespace evident::serve
