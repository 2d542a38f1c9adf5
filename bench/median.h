// bench/median.h — the median of per-round figures, the one number a noisy machine's rounds are
// summed up by (docs/BENCHMARKS.md), and the line bench/run-all.sh collects each figure from.
#pragma once

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace evident::bench {

// The upper median of a non-empty list (taken by value: it is sorted).
inline double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();  // nothing measured
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One figure for bench/run-all.sh: "figure KEY median=M low=L high=H rounds=N", the median of the
// per-round values with their spread. KEY names the table's line (docs/BENCHMARKS.md).
inline void PrintFigure(const std::string& key, const std::vector<double>& rounds) {
  if (rounds.empty()) return;
  const auto [low, high] = std::minmax_element(rounds.begin(), rounds.end());
  std::printf("figure %s median=%.4f low=%.4f high=%.4f rounds=%zu\n", key.c_str(), Median(rounds),
              *low, *high, rounds.size());
  std::fflush(stdout);
}

}  // namespace evident::bench
