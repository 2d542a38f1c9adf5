#include "consume_input.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

namespace evident::bench {

namespace {

void WriteConfig(const std::filesystem::path& path, bool with_effects) {
  std::ifstream in(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
  std::ofstream out(path);
  std::string line;
  bool skipping = false;
  while (std::getline(in, line)) {
    if (!with_effects && (line == "    effects:" || line == "    compensations:")) skipping = true;
    if (line == "    guards:") skipping = false;
    if (skipping) continue;
    if (line.rfind("contracts: contracts", 0) == 0) {
      line = "contracts: " + std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts";
    }
    if (!with_effects && line.find("reserve-stock") != std::string::npos) {
      line = "        evidence: [payment]";
    }
    out << line << '\n';
  }
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

}  // namespace

void WriteConfigWithoutEffects(const std::filesystem::path& path) { WriteConfig(path, false); }

void WriteConfigWithEffects(const std::filesystem::path& path) { WriteConfig(path, true); }

void WriteEvents(const std::filesystem::path& path, int64_t count) {
  std::ofstream out(path);
  int64_t written = 0;
  for (int64_t order = 0; written < count; ++order) {
    const std::string o = std::to_string(order);
    std::string lines[4];
    for (int v = 1; v <= 3; ++v) {
      const std::string type = v == 3 ? "cancelled" : "paid";
      lines[v - 1] =
          R"({"specversion":"1.0","id":"evt-)" + o + "-" + std::to_string(v) +
          R"(","source":"https://example.test/order-service","type":"com.example.training.order.)" +
          type + R"(","subject":"order-)" + o +
          R"(","time":"2026-07-31T12:00:00Z","schemaversion":1,"data":{"orderId":"order-)" + o +
          R"(","orderVersion":)" + std::to_string(v) +
          (v == 3 ? R"(,"reason":"customer-request")" : "") + "}}";
    }
    lines[3] =
        R"({"specversion":"1.0","id":"st-)" + o +
        R"(","source":"training://orders/checkout","type":"order.status.changed","subject":"order-)" +
        o + R"(","data":{"schemaVersion":2,"orderId":"order-)" + o +
        R"(","status":"paid","paymentReference":"pay-)" + o + R"("}})";
    if (order % 3 == 0) std::swap(lines[0], lines[1]);
    for (const std::string& line : lines) {
      if (written++ >= count) break;
      out << line << '\n';
    }
  }
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

}  // namespace evident::bench
