#include "core/fault_point.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>

namespace evident {
namespace {

struct Armed {
  FaultPointArming arming;
  std::atomic<int64_t> hits{0};
};

// Read once: the environment does not change under a running consumer, and the unarmed path
// must stay one branch on the hot path (a point sits in every commit).
Armed& ArmedPoint() {
  static Armed* const armed = [] {
    auto* a = new Armed;  // never freed: a point may be hit while static objects are destroyed
    const char* value = std::getenv(kFaultPointVariable);
    if (value != nullptr) a->arming = ParseFaultPoint(value);
    return a;
  }();
  return *armed;
}

}  // namespace

FaultPointArming ParseFaultPoint(std::string_view value) {
  FaultPointArming arming;
  const size_t colon = value.find(':');
  arming.point = value.substr(0, colon);
  arming.hit = 1;
  if (colon != std::string_view::npos) {
    std::string_view count = value.substr(colon + 1);
    if (count.size() > 5 && count.substr(count.size() - 5) == ":stop") {
      arming.stop = true;
      count.remove_suffix(5);
    }
    const auto [end, error] =
        std::from_chars(count.data(), count.data() + count.size(), arming.hit);
    if (error != std::errc() || end != count.data() + count.size()) arming.hit = 0;
  }
  if (arming.point.empty() || arming.hit < 1) return {};
  return arming;
}

void FaultPoint(std::string_view point) {
  Armed& armed = ArmedPoint();
  if (armed.arming.hit == 0 || point != armed.arming.point) return;
  if (armed.hits.fetch_add(1) + 1 != armed.arming.hit) return;
  if (armed.arming.stop) {
    kill(getpid(), SIGSTOP);  // every thread stops here; SIGCONT continues from this point
    return;
  }
  // SIGKILL, not abort(): no handler, no flush of stdio buffers, no destructors; exactly what a
  // `kill -9` from outside would leave behind, but at a chosen place.
  kill(getpid(), SIGKILL);
  _exit(137);  // not reached
}

}  // namespace evident
