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

std::vector<std::string> MakeContractOrderEvents(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> events;
  events.reserve(count);
  static const char* kSkus[] = {"SKU-1042-RED-M", "SKU-2210-BLU-L", "SKU-7781-BLK-S",
                                "SKU-0093-WHT-XL"};
  static const char* kReasons[] = {"customer-request", "payment-failed", "out-of-stock"};
  char buffer[4096];
  std::string lines, extra;
  for (size_t i = 0; i < count; ++i) {
    const unsigned long long order = i / 3;
    const int kind = static_cast<int>(i % 3);  // 0 paid, 1 status changed, 2 cancelled
    lines.clear();
    const int line_count = static_cast<int>(rng() % 2) + 1;
    for (int l = 0; l < line_count; ++l) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s{\"sku\":\"%s\",\"quantity\":%d,\"unitPrice\":{\"amount\":\"%d.%02d\","
                    "\"currency\":\"EUR\"}}",
                    l ? "," : "", kSkus[rng() % 4], static_cast<int>(rng() % 5) + 1,
                    static_cast<int>(rng() % 300), static_cast<int>(rng() % 100));
      lines += line;
    }
    const char* source = "https://example.test/order-service";
    const char* type = "com.example.training.order.paid";
    int schema_version = 1;
    char subject_version[32] = "";
    extra.clear();
    if (kind == 1) {
      source = "training://orders/checkout";
      type = "order.status.changed";
      schema_version = 1 + static_cast<int>(rng() % 2);
      extra = ",\"schemaVersion\":" + std::to_string(schema_version) + ",\"status\":\"paid\"";
      if (schema_version == 2)
        extra += ",\"paymentReference\":\"pay-" + std::to_string(order) + "\"";
    } else {
      const int version = kind == 0 ? 1 : 2;
      if (kind == 2) type = "com.example.training.order.cancelled";
      std::snprintf(subject_version, sizeof subject_version, ",\"subjectversion\":%d", version);
      extra = ",\"orderVersion\":" + std::to_string(version);
      if (kind == 2) extra += std::string(",\"reason\":\"") + kReasons[rng() % 3] + "\"";
    }
    const int n = std::snprintf(
        buffer, sizeof buffer,
        "{\"specversion\":\"1.0\",\"id\":\"evt-%llu-%zu\",\"source\":\"%s\",\"type\":\"%s\","
        "\"subject\":\"order-%llu\",\"time\":\"2026-07-%02dT%02d:%02d:%02d.%03dZ\","
        "\"datacontenttype\":\"application/json\",\"schemaversion\":%d%s,\"traceparent\":\"00-"
        "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\",\"correlationid\":\"corr-%llu\","
        "\"data\":{\"orderId\":\"order-%llu\"%s,\"customer\":{\"id\":\"cust-%llu\",\"country\":"
        "\"DE\"},\"lines\":[%s],\"total\":{\"amount\":\"%d.%02d\",\"currency\":\"EUR\"}}}",
        static_cast<unsigned long long>(seed), i, source, type, order,
        static_cast<int>(rng() % 28) + 1, static_cast<int>(rng() % 24),
        static_cast<int>(rng() % 60), static_cast<int>(rng() % 60), static_cast<int>(rng() % 1000),
        schema_version, subject_version, order, order, extra.c_str(),
        static_cast<unsigned long long>(rng() % 5000), lines.c_str(),
        static_cast<int>(rng() % 2000), static_cast<int>(rng() % 100));
    events.emplace_back(buffer, static_cast<size_t>(n));
  }
  return events;
}

}  // namespace evident::bench
