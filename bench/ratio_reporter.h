// bench/ratio_reporter.h — Google Benchmark reporter that also prints each benchmark's
// throughput as a ratio to a named baseline measured in the same run. With repetitions (best
// randomly interleaved, so that the machine's noise falls on both sides alike) the figure is the
// median rate of each benchmark, with the range of its runs.
//
// Absolute numbers on shared machines are noisy; a ratio against a baseline or a peer measured
// in the same process, on the same inputs, minutes apart at most, is what docs/BENCHMARKS.md
// quotes.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
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
      benchmark::BenchmarkName key = run.run_name;  // the repetitions of one benchmark as one
      key.repetitions.clear();
      const std::string name = key.str();
      if (rates_[name].empty()) order_.push_back(name);
      rates_[name].push_back(it->second.value);
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    double base = 0;
    for (const auto& [name, rates] : rates_) {
      if (name.rfind(baseline_, 0) == 0) base = Median(rates);
    }
    std::printf("\nitems/s relative to %s (same run, same inputs; median of the runs):\n",
                baseline_.c_str());
    for (const std::string& name : order_) {
      const std::vector<double>& rates = rates_[name];
      const auto [low, high] = std::minmax_element(rates.begin(), rates.end());
      std::printf("  %-44s %12.0f items/s  ratio %.3f   (%zu runs, %.0f-%.0f)\n", name.c_str(),
                  Median(rates), base > 0 ? Median(rates) / base : 0.0, rates.size(), *low, *high);
    }
  }

 private:
  std::string baseline_;
  static double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
  }

  std::map<std::string, std::vector<double>> rates_;
  std::vector<std::string> order_;
};

}  // namespace evident::bench
