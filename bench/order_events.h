// bench/order_events.h — a deterministic corpus of realistic order events for benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace evident::bench {

// `count` CloudEvents order events (paid / cancelled / status.changed), with realistic
// attributes and payloads of 300-900 bytes, from a fixed seed. One event per string.
std::vector<std::string> MakeOrderEvents(size_t count, uint64_t seed = 42);

}  // namespace evident::bench
