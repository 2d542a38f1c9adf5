// Stop signals: SIGTERM and SIGINT cancel a token, a second one kills.
#include "evident/cancel.h"

#include <signal.h>

#include <cassert>
#include <cerrno>

namespace evident {
namespace {

// The token the handler cancels. An atomic pointer, lock-free, so the handler may read it.
std::atomic<CancelToken*> stop_token{nullptr};
static_assert(std::atomic<CancelToken*>::is_always_lock_free);
std::atomic<int> last_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void SetDisposition(int signal_number, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = handler == SIG_DFL ? 0 : SA_RESTART;
  const int rc = sigaction(signal_number, &action, nullptr);
  assert(rc == 0 && "sigaction fails only for an invalid signal");
  (void)rc;
}

// Only async-signal-safe calls: an atomic load and store, sigaction. errno is kept for the
// interrupted code.
void OnStopSignal(int signal_number) {
  const int saved_errno = errno;
  last_stop_signal.store(signal_number);
  CancelToken* token = stop_token.load();
  if (token != nullptr) token->Cancel();
  SetDisposition(SIGTERM, SIG_DFL);
  SetDisposition(SIGINT, SIG_DFL);
  errno = saved_errno;
}

}  // namespace

int LastStopSignal() { return last_stop_signal.load(); }

void InstallStopSignals(CancelToken& token) {
  stop_token.store(&token);
  SetDisposition(SIGTERM, OnStopSignal);
  SetDisposition(SIGINT, OnStopSignal);
}

}  // namespace evident
