// fault_point.h — test-only crash points: a named place in the consume path where a test can
// kill the process (SIGKILL, as `kill -9` would) to check that a restart converges.
//
// Armed by the environment only: EVIDENT_FAULT_POINT=NAME kills the process at the first hit of
// FaultPoint(NAME); EVIDENT_FAULT_POINT=NAME:N at the Nth hit; NAME:N:stop stops it there instead
// (SIGSTOP, as a pause of the whole process would: a test continues it with SIGCONT). Unset
// (always, outside tests), a call costs one load of a flag read once per process. The points and
// where they stand are listed in docs/DEVELOPING.md.
//
// Thread-safety: callable from any thread (the WAL checkpoint thread has points of its own).
#pragma once

#include <cstdint>
#include <string_view>

namespace evident {

// The environment variable that arms a point.
inline constexpr const char* kFaultPointVariable = "EVIDENT_FAULT_POINT";

// Kills (or stops) the process when `point` is the armed point and this is its armed hit.
void FaultPoint(std::string_view point);

// How a point is armed, parsed from the variable's value ("NAME", "NAME:N" or "NAME:N:stop",
// N >= 1). Exposed for its test; `hit` is 0 when `value` arms nothing.
struct FaultPointArming {
  std::string_view point;
  int64_t hit = 0;
  bool stop = false;  // SIGSTOP rather than SIGKILL
};
FaultPointArming ParseFaultPoint(std::string_view value);

}  // namespace evident
