// evident/cancel.h — asking a long-running operation to stop at its next safe point.
//
// `evident consume` checks its CancelToken between batches: once cancelled, it finishes the
// batch in hand (its commit, then the acknowledgement), writes its summary and returns, so that a
// SIGTERM from a supervisor never leaves a half-applied batch to be redone. A retry loop checks
// the token before each wait and gives up when it is set (see retry.h).
//
// Thread-safety: Cancel() may be called from any thread and from a signal handler (one lock-free
// atomic store); cancelled() from any thread.
#pragma once

#include <atomic>

namespace evident {

class CancelToken {
 public:
  CancelToken() = default;
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Async-signal-safe. Idempotent; a token is never un-cancelled.
  void Cancel() noexcept { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

 private:
  // A lock-free atomic is what makes Cancel() safe in a signal handler.
  static_assert(std::atomic<bool>::is_always_lock_free);
  std::atomic<bool> cancelled_{false};
};

// Makes SIGTERM and SIGINT cancel `token`, which must outlive the process's use of the signals
// (a later call replaces it). The first such signal cancels and restores both signals' default
// dispositions, so a second Ctrl-C (or SIGTERM) kills the process at once, as a user expects when
// the clean stop takes too long.
//
// The handler is installed with SA_RESTART: a read() or write() blocked when the signal arrives
// resumes rather than failing with EINTR in code that does not expect it. A loop that waits for
// input must therefore wait with a timeout (poll) to notice the token.
void InstallStopSignals(CancelToken& token);

// The signal that last cancelled through InstallStopSignals (SIGTERM or SIGINT), 0 when none:
// a program that stopped on request exits with 128 + it, as the shell reports a signal.
int LastStopSignal();

}  // namespace evident
