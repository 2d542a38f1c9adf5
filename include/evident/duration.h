// evident/duration.h — durations as people write them in flags and in the configuration.
#pragma once

#include <cstdint>
#include <string>

#include "evident/status.h"

namespace evident {

// A duration such as "500ms", "30s", "2m", "12h" or "7d" (a bare number is seconds), in ms.
// At most 10 years; anything else is kInvalidArgument.
Result<int64_t> ParseDurationMs(const std::string& text);

}  // namespace evident
