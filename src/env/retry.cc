// Retry with capped exponential backoff, through a Clock, stopped by a CancelToken.
#include "evident/retry.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace evident {
namespace {

// The longest a wait runs before looking at the token again: how late a stop can be noticed.
constexpr int64_t kCancelCheckIntervalMs = 100;

bool Retryable(const RetryPolicy& policy, Code code) {
  return std::find(policy.retryable_codes.begin(), policy.retryable_codes.end(), code) !=
         policy.retryable_codes.end();
}

bool Cancelled(const CancelToken* cancel) { return cancel != nullptr && cancel->cancelled(); }

}  // namespace

bool SleepUnlessCancelled(Clock& clock, int64_t duration_ms, const CancelToken* cancel) {
  int64_t left_ms = duration_ms;
  while (left_ms > 0) {
    if (Cancelled(cancel)) return false;
    const int64_t slice_ms = std::min(left_ms, kCancelCheckIntervalMs);
    clock.SleepMs(slice_ms);
    left_ms -= slice_ms;
  }
  return !Cancelled(cancel);
}

namespace {

// A first attempt's error reads as it would without the retry loop around it.
Status WithAttempts(const Status& status, int attempts, bool cancelled) {
  if (attempts <= 1 && !cancelled) return status;
  std::string message = status.message();
  message += cancelled ? " (cancelled after " : " (after ";
  message += std::to_string(attempts) + (attempts == 1 ? " attempt)" : " attempts)");
  return Status(status.code(), std::move(message));
}

}  // namespace

int64_t RetryBackoffMs(const RetryPolicy& policy, int attempt) {
  assert(attempt >= 1);
  assert(policy.backoff_initial_ms >= 0 && policy.backoff_max_ms >= policy.backoff_initial_ms);
  int64_t backoff_ms = policy.backoff_initial_ms;
  // Doubling stops at the cap, so it cannot overflow however many attempts are allowed.
  for (int i = 1; i < attempt && backoff_ms < policy.backoff_max_ms; ++i) backoff_ms *= 2;
  return std::min(backoff_ms, policy.backoff_max_ms);
}

Status RetryBusy(const RetryPolicy& policy, Clock& clock, const CancelToken* cancel,
                 const std::function<Status()>& op) {
  assert(policy.attempts_max >= 1);
  Status status;
  for (int attempt = 1;; ++attempt) {
    status = op();
    if (status.ok()) return status;
    if (!Retryable(policy, status.code())) return WithAttempts(status, attempt, false);
    if (attempt == policy.attempts_max) return WithAttempts(status, attempt, false);
    if (!SleepUnlessCancelled(clock, RetryBackoffMs(policy, attempt), cancel)) {
      return WithAttempts(status, attempt, true);
    }
  }
}

}  // namespace evident
