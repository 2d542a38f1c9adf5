// bench/order_events.h — a deterministic corpus of realistic order events for benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace evident::bench {

// `count` CloudEvents order events (paid / cancelled / status.changed), with realistic
// attributes and payloads of 300-900 bytes, from a fixed seed. One event per string.
std::vector<std::string> MakeOrderEvents(size_t count, uint64_t seed = 42);

// `count` order events an Outbox over examples/orders/contracts appends and the consumers of
// examples/orders/evident.yaml apply: per order, in this order, `paid` (orderVersion 1) and
// `cancelled` (orderVersion 2, with a reason) from https://example.test/order-service for
// `fulfillment`, and between them an `order.status.changed` (schema version 1 or 2 in the
// envelope and the payload alike) from training://orders/checkout for `orders-projection`.
// Each carries a customer, one or two order lines and a total: 560-720 bytes, about 650
// on average. Ids are unique across seeds: "evt-<seed>-<index>".
std::vector<std::string> MakeContractOrderEvents(size_t count, uint64_t seed = 42);

}  // namespace evident::bench
