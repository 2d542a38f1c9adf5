#include "evident/retry.h"

#include <gtest/gtest.h>

#include <thread>

namespace evident {
namespace {

// An operation that fails with `failure` the first `failures` times, then succeeds.
struct Flaky {
  int failures;
  Status failure = Status::Unavailable("database is locked");
  int calls = 0;
  Status operator()() {
    ++calls;
    return calls <= failures ? failure : Status::Ok();
  }
};

const RetryPolicy kPolicy{.attempts_max = 5, .backoff_initial_ms = 10, .backoff_max_ms = 50};

TEST(RetryBackoff, DoublesUpToTheCap) {
  EXPECT_EQ(RetryBackoffMs(kPolicy, 1), 10);
  EXPECT_EQ(RetryBackoffMs(kPolicy, 2), 20);
  EXPECT_EQ(RetryBackoffMs(kPolicy, 3), 40);
  EXPECT_EQ(RetryBackoffMs(kPolicy, 4), 50);
  EXPECT_EQ(RetryBackoffMs(kPolicy, 1'000'000), 50);  // no overflow however far
  const RetryPolicy defaults;
  EXPECT_EQ(RetryBackoffMs(defaults, 7), 640);
  EXPECT_EQ(RetryBackoffMs(defaults, 8), 1000);
}

TEST(Retry, SucceedsAfterTransientFailuresWithExactWaits) {
  ManualClock clock;
  Flaky op{.failures = 3};
  ASSERT_TRUE(RetryBusy(kPolicy, clock, nullptr, std::ref(op)).ok());
  EXPECT_EQ(op.calls, 4);
  EXPECT_EQ(clock.slept_ms(), 10 + 20 + 40);
  EXPECT_EQ(clock.NowMs(), 70);
}

TEST(Retry, GivesUpAfterTheLastAttemptWithTheLastError) {
  ManualClock clock;
  Flaky op{.failures = 100};
  const Status status = RetryBusy(kPolicy, clock, nullptr, std::ref(op));
  EXPECT_EQ(op.calls, 5);
  EXPECT_EQ(status.code(), Code::kUnavailable);
  EXPECT_EQ(status.message(), "database is locked (after 5 attempts)");
  EXPECT_EQ(clock.slept_ms(), 10 + 20 + 40 + 50);  // no wait after the last attempt
}

TEST(Retry, ANonRetryableErrorReturnsAtOnceUnchanged) {
  ManualClock clock;
  Flaky op{.failures = 1, .failure = Status::Corruption("bad page")};
  const Status status = RetryBusy(kPolicy, clock, nullptr, std::ref(op));
  EXPECT_EQ(op.calls, 1);
  EXPECT_EQ(status.ToString(), "corruption: bad page");
  EXPECT_EQ(clock.slept_ms(), 0);
}

TEST(Retry, ANonRetryableErrorAfterRetriesSaysHowManyRan) {
  ManualClock clock;
  int calls = 0;
  const Status status = RetryBusy(kPolicy, clock, nullptr, [&calls] {
    return ++calls < 3 ? Status::Unavailable("busy") : Status::IoError("disk gone");
  });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(status.ToString(), "io-error: disk gone (after 3 attempts)");
  EXPECT_EQ(clock.slept_ms(), 30);
}

TEST(Retry, RetryableCodesAreTheCallersChoice) {
  ManualClock clock;
  RetryPolicy policy = kPolicy;
  policy.retryable_codes = {Code::kFailedPrecondition};  // standing in for a write conflict
  Flaky conflict{.failures = 2, .failure = Status::FailedPrecondition("conflict")};
  EXPECT_TRUE(RetryBusy(policy, clock, nullptr, std::ref(conflict)).ok());
  EXPECT_EQ(conflict.calls, 3);
  Flaky busy{.failures = 2};  // kUnavailable is no longer in the list
  EXPECT_EQ(RetryBusy(policy, clock, nullptr, std::ref(busy)).code(), Code::kUnavailable);
  EXPECT_EQ(busy.calls, 1);
}

TEST(Retry, OneAttemptNeverRetries) {
  ManualClock clock;
  Flaky op{.failures = 1};
  const Status status =
      RetryBusy({.attempts_max = 1, .backoff_initial_ms = 10}, clock, nullptr, std::ref(op));
  EXPECT_EQ(status.message(), "database is locked");
  EXPECT_EQ(op.calls, 1);
  EXPECT_EQ(clock.slept_ms(), 0);
}

TEST(Retry, ACancelledTokenStopsTheRetryingButNotTheFirstAttempt) {
  ManualClock clock;
  CancelToken cancel;
  cancel.Cancel();
  Flaky op{.failures = 100};
  const Status status = RetryBusy(kPolicy, clock, &cancel, std::ref(op));
  EXPECT_EQ(op.calls, 1);
  EXPECT_EQ(status.message(), "database is locked (cancelled after 1 attempt)");
  EXPECT_EQ(clock.slept_ms(), 0);
}

// A clock whose waits cancel the token once the time passes a mark: a stop signal arriving
// during a backoff.
class CancellingClock final : public Clock {
 public:
  CancellingClock(CancelToken& cancel, int64_t cancel_at_ms)
      : cancel_(cancel), at_ms_(cancel_at_ms) {}
  int64_t NowMs() override { return clock_.NowMs(); }
  void SleepMs(int64_t duration_ms) override {
    clock_.SleepMs(duration_ms);
    if (clock_.NowMs() >= at_ms_) cancel_.Cancel();
  }
  ManualClock clock_;

 private:
  CancelToken& cancel_;
  const int64_t at_ms_;
};

TEST(Retry, CancellationCutsALongWaitShort) {
  CancelToken cancel;
  CancellingClock clock(cancel, 250);
  Flaky op{.failures = 100};
  const RetryPolicy slow{.attempts_max = 10, .backoff_initial_ms = 1000, .backoff_max_ms = 1000};
  const Status status = RetryBusy(slow, clock, &cancel, std::ref(op));
  EXPECT_EQ(op.calls, 1);
  EXPECT_EQ(status.message(), "database is locked (cancelled after 1 attempt)");
  // The wait runs in 100 ms slices: it ends at the first slice boundary past the cancellation.
  EXPECT_EQ(clock.clock_.slept_ms(), 300);
}

TEST(Retry, CancellationFromAnotherThreadStopsARealWait) {
  CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel.Cancel();
  });
  Flaky op{.failures = 100};
  const auto start = std::chrono::steady_clock::now();
  const RetryPolicy slow{.attempts_max = 3, .backoff_initial_ms = 60'000, .backoff_max_ms = 60'000};
  const Status status = RetryBusy(slow, SystemClock(), &cancel, std::ref(op));
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(op.calls, 1);
  EXPECT_EQ(status.code(), Code::kUnavailable);
}

}  // namespace
}  // namespace evident
