// bench/consume_input.h — the input of the consume benchmarks (consume_bench on SQLite,
// postgres_bench on PostgreSQL): the orders example's configuration without its effects, and a
// stream of order events.
#pragma once

#include <cstdint>
#include <filesystem>

namespace evident::bench {

// examples/orders/evident.yaml without its `effects` and `compensations` (from the first of them
// to `guards:`), its contracts directory made absolute, written to `path`. Exits on failure.
void WriteConfigWithoutEffects(const std::filesystem::path& path);

// examples/orders/evident.yaml whole (effects and compensations included: a paid order writes a
// reservation intent, a cancellation its compensation), its contracts directory made absolute.
void WriteConfigWithEffects(const std::filesystem::path& path);

// `count` events: orders paid v1, v2, cancelled v3 for the ordered consumer (every third order
// arrives v2 before v1, so deferral and draining are part of the load) and a status change for
// the unordered one. Exits on failure.
void WriteEvents(const std::filesystem::path& path, int64_t count);

}  // namespace evident::bench
