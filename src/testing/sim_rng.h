// The simulations' random source: SplitMix64, small, fast, and the same sequence on every
// platform, so that a seed replays the same run anywhere.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace evident::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }
  bool Percent(int64_t p) { return Below(100) < p; }

 private:
  uint64_t state_;
};

// An integer from the environment, or `fallback` when unset or empty.
inline int64_t EnvInt(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::atoll(text);
}

}  // namespace evident::testing
