#include "order_events.h"

#include <cstdio>
#include <random>

namespace evident::bench {

std::vector<std::string> MakeOrderEvents(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> events;
  events.reserve(count);
  static const char* kTypes[] = {"com.example.training.order.paid",
                                 "com.example.training.order.cancelled", "order.status.changed"};
  static const char* kStatus[] = {"paid", "packed", "shipped", "delivered", "cancelled"};
  static const char* kSkus[] = {"SKU-1042-RED-M", "SKU-2210-BLU-L", "SKU-7781-BLK-S",
                                "SKU-0093-WHT-XL"};
  char buffer[4096];
  for (size_t i = 0; i < count; ++i) {
    const uint64_t order = rng() % 100000;
    const int version = static_cast<int>(rng() % 40) + 1;
    const char* type = kTypes[rng() % 3];
    std::string lines;
    const int line_count = static_cast<int>(rng() % 4) + 1;
    for (int l = 0; l < line_count; ++l) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s{\"sku\":\"%s\",\"quantity\":%d,\"unitPrice\":{\"amount\":\"%d.%02d\","
                    "\"currency\":\"EUR\"}}",
                    l ? "," : "", kSkus[rng() % 4], static_cast<int>(rng() % 5) + 1,
                    static_cast<int>(rng() % 300), static_cast<int>(rng() % 100));
      lines += line;
    }
    const int n = std::snprintf(
        buffer, sizeof buffer,
        "{\"specversion\":\"1.0\",\"id\":\"evt-%016llx\",\"source\":\"https://example.test/"
        "order-service\",\"type\":\"%s\",\"subject\":\"order-%llu\",\"time\":\"2026-07-%02dT%02d:"
        "%02d:%02d.%03dZ\",\"datacontenttype\":\"application/json\",\"schemaversion\":%d,"
        "\"subjectversion\":%d,\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-"
        "b7ad6b7169203331-01\",\"correlationid\":\"corr-%llu\",\"data\":{\"schemaVersion\":%d,"
        "\"orderId\":\"order-%llu\",\"orderVersion\":%d,\"status\":\"%s\",\"customer\":{\"id\":"
        "\"cust-%llu\",\"country\":\"DE\"},\"lines\":[%s],\"total\":{\"amount\":\"%d.%02d\","
        "\"currency\":\"EUR\"}}}",
        static_cast<unsigned long long>(rng()), type, static_cast<unsigned long long>(order),
        static_cast<int>(rng() % 28) + 1, static_cast<int>(rng() % 24),
        static_cast<int>(rng() % 60), static_cast<int>(rng() % 60), static_cast<int>(rng() % 1000),
        1 + static_cast<int>(rng() % 2), version, static_cast<unsigned long long>(order),
        1 + static_cast<int>(rng() % 2), static_cast<unsigned long long>(order), version,
        kStatus[rng() % 5], static_cast<unsigned long long>(rng() % 5000), lines.c_str(),
        static_cast<int>(rng() % 2000), static_cast<int>(rng() % 100));
    events.emplace_back(buffer, static_cast<size_t>(n));
  }
  return events;
}

}  // namespace evident::bench
