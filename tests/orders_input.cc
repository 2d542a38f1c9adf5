#include "orders_input.h"

#include <algorithm>
#include <random>

namespace evident::testing {
namespace {

std::string Paid(int order, int version, const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.paid","subject":"order-)" +
         std::to_string(order) + R"(","schemaversion":1,"data":{"orderId":"order-)" +
         std::to_string(order) + R"(","orderVersion":)" + std::to_string(version) + "}}";
}
std::string Cancelled(int order, int version, const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.cancelled","subject":"order-)" +
         std::to_string(order) + R"(","schemaversion":1,"data":{"orderId":"order-)" +
         std::to_string(order) + R"(","orderVersion":)" + std::to_string(version) +
         R"(,"reason":")" +
         // A third of the cancellations require the fulfillment consumer's compensation.
         (order % 3 == 0 ? "reservation-rejected" : "customer-request") + R"("}})";
}
std::string Status(int order, int n) {
  return R"({"specversion":"1.0","id":"status-)" + std::to_string(order) + "-" + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed","subject":"order-)" +
         std::to_string(order) + R"(","data":{"schemaVersion":)" + std::to_string(1 + n % 2) +
         R"(,"orderId":"order-)" + std::to_string(order) + R"(","status":"s)" + std::to_string(n) +
         R"("}})";
}

}  // namespace

std::vector<std::string> MakeInput(int orders, uint64_t seed, int first_order) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> lines;
  for (int o = first_order; o < first_order + orders; ++o) {
    std::vector<std::string> events;
    const bool lost_v2 = rng() % 25 == 0;  // a gap that never closes: v3, v4 stay deferred
    for (int v = 1; v <= 4; ++v) {
      if (v == 2 && lost_v2) continue;
      const std::string id = "evt-" + std::to_string(o) + "-v" + std::to_string(v);
      events.push_back(v == 4 ? Cancelled(o, v, id) : Paid(o, v, id));
    }
    events.push_back(Status(o, 0));
    events.push_back(Status(o, 1));
    if (rng() % 10 == 0) events.push_back(Paid(o, 2, "evt-conflict-" + std::to_string(o)));
    if (rng() % 20 == 0)
      events.push_back("{\"specversion\":\"1.0\",\"id\":\"broken-" + std::to_string(o));
    std::shuffle(events.begin(), events.end(), rng);
    for (std::string& e : events) {
      lines.push_back(e);
      if (rng() % 8 == 0) lines.push_back(e);  // a redelivery
    }
  }
  return lines;
}

}  // namespace evident::testing
