// bench/median.h — the median of per-round figures, the one number a noisy machine's rounds are
// summed up by (docs/BENCHMARKS.md).
#pragma once

#include <algorithm>
#include <vector>

namespace evident::bench {

// The upper median of a non-empty list (taken by value: it is sorted).
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace evident::bench
