// Durations as people write them (evident/duration.h).
#include "evident/duration.h"

namespace evident {

Result<int64_t> ParseDurationMs(const std::string& text) {
  constexpr int64_t kMaxMs = int64_t{10} * 365 * 24 * 3600 * 1000;
  size_t digits = 0;
  while (digits < text.size() && digits < 12 && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  const std::string unit = text.substr(digits);
  int64_t scale = 0;
  if (unit == "ms") scale = 1;
  if (unit == "s" || unit.empty()) scale = 1000;
  if (unit == "m") scale = 60'000;
  if (unit == "h") scale = 3'600'000;
  if (unit == "d") scale = 86'400'000;
  if (digits == 0 || scale == 0) {
    return Status::InvalidArgument("\"" + text + "\" is not a duration (500ms, 30s, 2m, 12h, 7d)");
  }
  const int64_t count = std::stoll(text.substr(0, digits));  // at most 12 digits: no overflow
  if (count > kMaxMs / scale) {
    return Status::InvalidArgument("duration \"" + text + "\" is longer than 10 years");
  }
  return count * scale;
}

}  // namespace evident
