// bench/append_rounds.h — the rounds of the evident_append benchmarks (sqlite_ext_bench,
// pg_ext_bench): a plain INSERT and evident_append timed once per round, in alternating order,
// each round's rates and ratio printed, and the median of the ratios (docs/BENCHMARKS.md).
#pragma once

#include <cstdio>
#include <functional>
#include <vector>

#include "median.h"

namespace evident::bench {

// `plain(round)` and `evident(round)` run `count` events and return their seconds; the names
// label the two sides in what is printed.
inline double AppendRounds(int rounds, size_t count, const std::function<double(int)>& plain,
                           const std::function<double(int)>& evident,
                           const char* plain_name = "plain INSERT",
                           const char* evident_name = "evident_append") {
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
        "round %d: %s %8.0f events/s | %s %8.0f events/s | evident/plain %.3f | per event: "
        "plain %.1f us, evident %.1f us\n",
        round, plain_name, n / plain_s, evident_name, n / evident_s, ratios.back(),
        plain_s / n * 1e6, evident_s / n * 1e6);
    std::fflush(stdout);
  }
  const double median = Median(ratios);
  std::printf("median ratio %s / %s : %.3f   (goal >= 0.5)\n", evident_name, plain_name, median);
  return median;
}

}  // namespace evident::bench
