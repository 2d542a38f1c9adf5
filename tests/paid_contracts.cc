#include "paid_contracts.h"

#include <gtest/gtest.h>

#include <fstream>

namespace evident::testing {

namespace fs = std::filesystem;

void WritePaidConfig(const fs::path& dir, const std::string& versions, bool with_archivist) {
  fs::remove_all(dir / "contracts");
  fs::create_directories(dir / "contracts/order.paid");
  fs::create_directories(dir / "contracts/consumers");
  for (int v = 1; v <= 2; ++v) {
    std::ofstream(dir / "contracts/order.paid" / ("v" + std::to_string(v) + ".schema.json"))
        << R"({"type":"object","required":["orderVersion"],)"
           R"("properties":{"orderVersion":{"type":"integer","minimum":1}}})";
  }
  std::ofstream(dir / "contracts/consumers" / (std::string(kPaidConsumer) + ".yaml"))
      << "id: " << kPaidConsumer
      << "\nresultversion: 1\nboundary: [\"shop\"]\n"
         "unknown_version: contract-update-required\n"
         "accepts:\n  - type: order.paid\n    versions: "
      << versions
      << "\n    reads: [/orderVersion]\n"
         "ordering:\n  by: subject\n  version_at: /data/orderVersion\n"
         "gap:\n  deadline_seconds: 3600\n  route: wait\n";
  // Each applied version intends an effect and, every other version, records a compensation
  // (nothing performs them here: the tests compare what the decisions wrote).
  std::string consumers = std::string("consumers:\n  - id: ") + kPaidConsumer +
                          "\n    projection:\n      order.paid:\n        state: paid\n"
                          "    effects:\n      - name: notify\n        on: order.paid\n"
                          "        key: \"notify:{subject}:v{subject_version}\"\n"
                          "        target: {url: \"http://127.0.0.1:9/notify\"}\n"
                          "    compensations:\n      - on: order.paid\n"
                          "        key: \"refund:{subject}:v{previous_version}\"\n";
  if (with_archivist) {
    std::ofstream(dir / "contracts/consumers" / (std::string(kArchivist) + ".yaml"))
        << "id: " << kArchivist
        << "\nresultversion: 1\nboundary: [\"shop\"]\n"
           "unknown_version: contract-update-required\n"
           "accepts:\n  - type: order.paid\n    versions: [1]\n    reads: [/orderVersion]\n"
           "ordering: none\n";
    consumers += std::string("  - id: ") + kArchivist +
                 "\n    projection:\n      order.paid:\n        state: archived\n";
  }
  std::ofstream config(dir / "evident.yaml");
  config << "contracts: contracts\nprofile: cloudevents\n" << consumers;
  config.close();
  EXPECT_TRUE(config.good()) << "cannot write " << dir / "evident.yaml";
}

std::string Paid(const std::string& id, int64_t version, int64_t schema_version,
                 const std::string& subject, const std::string& extra) {
  return R"({"specversion":"1.0","id":")" + id + R"(","source":"shop","type":"order.paid",)" +
         R"("subject":")" + subject + R"(","schemaversion":)" + std::to_string(schema_version) +
         R"(,"data":{"orderVersion":)" + std::to_string(version) + extra + "}}";
}

}  // namespace evident::testing
