// tests/orders_input.h — the deterministic input of the crash tests: events of the orders example
// (examples/orders/evident.yaml) with every outcome the consume path decides.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace evident::testing {

// The consumers of examples/orders/evident.yaml.
inline constexpr const char* kOrderConsumers[] = {"orders-projection", "fulfillment"};

// One line per event, for `orders` orders with subjects "order-<first_order>" ..
// "order-<first_order + orders - 1>" (event ids name their order too, so inputs of disjoint
// order ranges can follow one another in one file):
// versions 1..4 of each order (payments, then a cancellation) in an order shuffled within the
// order's events (deferred, then drained), two status changes (schema versions 1 and 2),
// redeliveries (a line given twice), conflicting ids for version 2 (same-version conflicts or
// stale), versions 2 that never come (v3 and v4 stay deferred) and lines that are not JSON.
// The same `seed` and `first_order` give the same lines.
std::vector<std::string> MakeInput(int orders, uint64_t seed, int first_order = 0);

}  // namespace evident::testing
