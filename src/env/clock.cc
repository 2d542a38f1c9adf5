// Clocks: the system clock and the manual one.
#include "evident/clock.h"

#include <cassert>
#include <chrono>
#include <thread>

namespace evident {
namespace {

class RealClock final : public Clock {
 public:
  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void SleepMs(int64_t duration_ms) override {
    if (duration_ms <= 0) return;
    // sleep_for measures on the steady clock and resumes after a signal.
    std::this_thread::sleep_for(std::chrono::milliseconds(duration_ms));
  }
  int64_t MonotonicMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock::~Clock() = default;

Clock& SystemClock() {
  // Never freed: usable from the destructor of any static object.
  static RealClock* const clock = new RealClock;
  return *clock;
}

int64_t ManualClock::NowMs() { return now_ms_.load(); }

void ManualClock::SleepMs(int64_t duration_ms) {
  if (duration_ms <= 0) return;
  slept_ms_.fetch_add(duration_ms);
  monotonic_ms_.fetch_add(duration_ms);
  now_ms_.fetch_add(duration_ms);
}

int64_t ManualClock::MonotonicMs() { return monotonic_ms_.load(); }

void ManualClock::Set(int64_t now_ms) {
  const int64_t before = now_ms_.exchange(now_ms);
  if (now_ms > before) monotonic_ms_.fetch_add(now_ms - before);
}

void ManualClock::Advance(int64_t duration_ms) {
  assert(duration_ms >= 0 && "a clock advances forwards; Set() moves it back");
  monotonic_ms_.fetch_add(duration_ms);
  now_ms_.fetch_add(duration_ms);
}

int64_t ManualClock::slept_ms() const { return slept_ms_.load(); }

}  // namespace evident
