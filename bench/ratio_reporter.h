// bench/ratio_reporter.h — Google Benchmark reporter that also prints each benchmark's
// throughput as a ratio to a named baseline measured in the same run.
//
// Absolute numbers on shared machines are noisy; a ratio against a baseline or a peer measured
// in the same process, on the same inputs, minutes apart at most, is what docs/BENCHMARKS.md
// quotes.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace evident::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // `baseline` is the name (as printed, e.g. "BM_BareSimdjson") the others are divided by.
  explicit RatioReporter(std::string baseline) : baseline_(std::move(baseline)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const auto it = run.counters.find("items_per_second");
      if (it == run.counters.end()) continue;
      rates_[run.benchmark_name()] = it->second.value;
      order_.push_back(run.benchmark_name());
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    double base = 0;
    for (const auto& [name, rate] : rates_) {
      if (name.rfind(baseline_, 0) == 0) base = rate;
    }
    std::printf("\nitems/s relative to %s (same run, same inputs):\n", baseline_.c_str());
    for (const std::string& name : order_) {
      const double rate = rates_[name];
      std::printf("  %-60s %12.0f items/s  ratio %.3f\n", name.c_str(), rate,
                  base > 0 ? rate / base : 0.0);
    }
  }

 private:
  std::string baseline_;
  std::map<std::string, double> rates_;
  std::vector<std::string> order_;
};

}  // namespace evident::bench
