// evident/clock.h — the time seam: what "now" is, and how to wait.
//
// Everything that reads the time or waits (ledger timestamps, retry backoff, linger) takes a
// Clock&, so that the deterministic simulation runs the real code against a ManualClock: there,
// time moves only when the test moves it, and a wait takes no real time.
//
// Thread-safety: both clocks may be used from any number of threads at once.
#pragma once

#include <atomic>
#include <cstdint>

namespace evident {

class Clock {
 public:
  virtual ~Clock();

  // Milliseconds since the Unix epoch, UTC. The system clock may step backwards (NTP), so a
  // duration measured with it can be negative; callers clamp.
  virtual int64_t NowMs() = 0;

  // Waits `duration_ms`; nothing when it is <= 0. For retry backoff and linger waits.
  virtual void SleepMs(int64_t duration_ms) = 0;

  // Milliseconds from a fixed point of this clock's own, never going back: what durations
  // (linger, a batch's age, idle and unreachable time) are measured with, so that a step of
  // the wall clock neither ends a wait early nor makes it last. Default: NowMs (a clock that
  // never steps back).
  virtual int64_t MonotonicMs() { return NowMs(); }
};

// The process-wide real clock: NowMs reads std::chrono::system_clock; SleepMs waits on, and
// MonotonicMs reads, the steady clock, so a clock step does not lengthen or cut a wait. Never
// destroyed.
Clock& SystemClock();

// A clock that moves only when told to. SleepMs advances the time instead of waiting. Its
// monotonic time moves with every advance and sleep, and with a Set forwards, never back.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0) : now_ms_(now_ms) {}

  int64_t NowMs() override;
  void SleepMs(int64_t duration_ms) override;
  int64_t MonotonicMs() override;

  // Sets the time; it may go backwards, as the system clock can.
  void Set(int64_t now_ms);
  // Moves the time forward by `duration_ms` >= 0.
  void Advance(int64_t duration_ms);
  // The sum of every SleepMs so far: tells a test how long the code under test waited, apart
  // from the time the test itself moved.
  int64_t slept_ms() const;

 private:
  std::atomic<int64_t> now_ms_;
  std::atomic<int64_t> monotonic_ms_{0};
  std::atomic<int64_t> slept_ms_{0};
};

}  // namespace evident
