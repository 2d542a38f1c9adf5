// bench/append_rounds.h — the rounds of the evident_append benchmarks (sqlite_ext_bench,
// pg_ext_bench): a plain INSERT and evident_append timed once per round, in alternating order,
// each round's rates and ratio printed, and the median of the ratios (docs/BENCHMARKS.md).
#pragma once

#include <cstdio>
#include <functional>
#include <vector>

#include "median.h"

namespace evident::bench {

// `plain(round)` and `evident(round)` run `count` events and return their seconds.
inline double AppendRounds(int rounds, size_t count, const std::function<double(int)>& plain,
                           const std::function<double(int)>& evident) {
  std::vector<double> ratios;
  for (int round = 1; round <= rounds; ++round) {
    double plain_s = 0, evident_s = 0;
    if (round % 2 == 1) {
      plain_s = plain(round);
      evident_s = evident(round);
    } else {
      evident_s = evident(round);
      plain_s = plain(round);
    }
    const double n = static_cast<double>(count);
    ratios.push_back(plain_s / evident_s);
    std::printf(
        "round %d: plain INSERT %8.0f events/s | evident_append %8.0f events/s | "
        "evident/plain %.3f | per event: plain %.1f us, evident %.1f us\n",
        round, n / plain_s, n / evident_s, ratios.back(), plain_s / n * 1e6, evident_s / n * 1e6);
    std::fflush(stdout);
  }
  const double median = Median(ratios);
  std::printf("median ratio evident_append / plain INSERT : %.3f   (goal >= 0.5)\n", median);
  return median;
}

}  // namespace evident::bench
