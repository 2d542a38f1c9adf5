// bench/outbox_fill.h — a SQLite outbox filled with events, for the relay benchmarks
// (relay_bench to JetStream, kafka_bench to Kafka).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "evident/store.h"

namespace evident::bench {

// A fresh SQLite outbox at `path` holding `events`, appended through evident::Outbox over
// examples/orders/contracts in transactions of 256 (not timed). The store is closed and opened
// again, so that a relay does not start beside the checkpoints of the appends (the last
// connection's close checkpoints the WAL). Exits on failure.
std::unique_ptr<Store> FillOutbox(const std::filesystem::path& path,
                                  const std::vector<std::string>& events);

}  // namespace evident::bench
