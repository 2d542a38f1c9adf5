// bench/schema_bench.cc — payload schema validation throughput (parse + validate per instance).
//
// Workloads: the orders payload schemas from the seeds (order.status.changed v1 and v2) and a
// larger order.placed schema with $ref, oneOf, pattern and format. Instances are generated
// deterministically: exactly 90% valid, 10% invalid (every tenth). The schemas are draft-07 so
// that the same files run unchanged on ajv and valijson (bench/schema_peers.sh).
//
//   schema_bench --write-data=DIR   writes DIR/<workload>.schema.json and DIR/<workload>.ndjson
//   schema_bench [benchmark flags]  runs the benchmarks on the same generated data
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "evident/schema.h"

namespace {

constexpr size_t kInstanceCount = 10'000;

constexpr std::string_view kOrdersV1 = R"({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://schemas.example.com/order.status.changed/1",
  "type": "object",
  "required": ["schemaVersion", "orderId", "status"],
  "properties": {
    "schemaVersion": {"type": "integer"},
    "orderId": {"type": "string"},
    "status": {"type": "string"}
  }
})";

constexpr std::string_view kOrdersV2 = R"({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://schemas.example.com/order.status.changed/2",
  "type": "object",
  "required": ["schemaVersion", "orderId", "status"],
  "properties": {
    "schemaVersion": {"type": "integer"},
    "orderId": {"type": "string"},
    "status": {"type": "string"},
    "paymentReference": {"type": "string"}
  }
})";

constexpr std::string_view kOrderPlaced = R"({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://schemas.example.com/order.placed/3",
  "type": "object",
  "required": ["schemaVersion", "orderId", "placedAt", "currency", "customer", "items", "payment"],
  "additionalProperties": false,
  "properties": {
    "schemaVersion": {"const": 3},
    "orderId": {"type": "string", "pattern": "^ord_[0-9A-Za-z]{12}$"},
    "placedAt": {"type": "string", "format": "date-time"},
    "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "customer": {"$ref": "#/definitions/customer"},
    "items": {"type": "array", "minItems": 1, "maxItems": 100,
              "items": {"$ref": "#/definitions/lineItem"}},
    "shippingAddress": {"$ref": "#/definitions/address"},
    "payment": {"oneOf": [{"$ref": "#/definitions/card"}, {"$ref": "#/definitions/bankTransfer"},
                          {"$ref": "#/definitions/wallet"}]},
    "discountCodes": {"type": "array", "uniqueItems": true,
                      "items": {"type": "string", "pattern": "^[A-Z0-9]{4,16}$"}},
    "notes": {"type": "string", "maxLength": 500}
  },
  "definitions": {
    "money": {"type": "object", "required": ["amount", "currency"], "additionalProperties": false,
              "properties": {"amount": {"type": "integer", "minimum": 0},
                             "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}},
    "customer": {"type": "object", "required": ["id", "email"],
                 "properties": {"id": {"type": "string", "format": "uuid"},
                                "email": {"type": "string", "format": "email"},
                                "name": {"type": "string", "minLength": 1, "maxLength": 200},
                                "loyaltyTier": {"enum": ["none", "silver", "gold", "platinum"]}}},
    "address": {"type": "object", "required": ["line1", "city", "country"],
                "properties": {"line1": {"type": "string", "minLength": 1},
                               "line2": {"type": "string"},
                               "city": {"type": "string", "minLength": 1},
                               "postalCode": {"type": "string", "pattern": "^[0-9A-Z -]{3,10}$"},
                               "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}},
    "lineItem": {"type": "object", "required": ["sku", "quantity", "unitPrice"],
                 "additionalProperties": false,
                 "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4,8}$"},
                                "quantity": {"type": "integer", "minimum": 1, "maximum": 1000},
                                "unitPrice": {"$ref": "#/definitions/money"},
                                "giftWrap": {"type": "boolean"}}},
    "card": {"type": "object", "required": ["method", "last4", "network"],
             "properties": {"method": {"const": "card"},
                            "last4": {"type": "string", "pattern": "^[0-9]{4}$"},
                            "network": {"enum": ["visa", "mastercard", "amex"]}}},
    "bankTransfer": {"type": "object", "required": ["method", "iban"],
                     "properties": {"method": {"const": "bank_transfer"},
                                    "iban": {"type": "string",
                                             "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$"}}},
    "wallet": {"type": "object", "required": ["method", "provider"],
               "properties": {"method": {"const": "wallet"},
                              "provider": {"enum": ["applepay", "googlepay", "paypal"]}}}
  }
})";

// Deterministic generator (64-bit LCG): the same data on every run and every machine.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 17;
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  std::string Alnum(size_t n) {
    static constexpr char kChars[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string out;
    for (size_t i = 0; i < n; ++i) out.push_back(kChars[Below(62)]);
    return out;
  }
  std::string Digits(size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<char>('0' + Below(10)));
    return out;
  }
  std::string Upper(size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<char>('A' + Below(26)));
    return out;
  }
  std::string Hex(size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out.push_back("0123456789abcdef"[Below(16)]);
    return out;
  }

 private:
  uint64_t state_;
};

const char* kStatuses[] = {"created", "paid", "packed", "shipped", "delivered", "cancelled"};

std::string StatusChanged(Random& random, size_t index, bool v2) {
  const bool valid = index % 10 != 9;
  std::string order_id = "\"ord_" + random.Alnum(12) + "\"";
  std::string version = v2 ? "2" : "1";
  std::string status = std::string("\"") + kStatuses[random.Below(6)] + "\"";
  bool drop_status = false;
  if (!valid) {
    switch (random.Below(3)) {
      case 0:
        version = "\"" + version + "\"";
        break;  // schemaVersion must be an integer
      case 1:
        order_id = "1" + random.Digits(5);
        break;  // orderId must be a string
      default:
        drop_status = true;
        break;  // status is required
    }
  }
  std::string out = "{\"schemaVersion\":" + version + ",\"orderId\":" + order_id;
  if (!drop_status) out += ",\"status\":" + status;
  if (v2 && random.Below(2) == 0) out += ",\"paymentReference\":\"pay_" + random.Alnum(16) + "\"";
  out += ",\"occurredBy\":\"svc-orders\"}";
  return out;
}

std::string OrderPlaced(Random& random, size_t index) {
  const bool valid = index % 10 != 9;
  const int mutation = valid ? -1 : static_cast<int>(random.Below(5));
  static const char* kCurrencies[] = {"EUR", "USD", "GBP", "CHF"};
  const std::string currency = kCurrencies[random.Below(4)];
  char placed_at[40];
  std::snprintf(placed_at, sizeof placed_at, "2024-%02zu-%02zuT%02zu:%02zu:%02zu.%03zuZ",
                1 + random.Below(12), 1 + random.Below(28), random.Below(24), random.Below(60),
                random.Below(60), random.Below(1000));
  std::string out = "{\"schemaVersion\":3,\"orderId\":\"ord_" +
                    (mutation == 0 ? random.Alnum(11) + "!" : random.Alnum(12)) +
                    "\",\"placedAt\":\"" + placed_at + "\",\"currency\":\"" + currency + "\"";
  out += ",\"customer\":{\"id\":\"" + random.Hex(8) + "-" + random.Hex(4) + "-4" + random.Hex(3) +
         "-a" + random.Hex(3) + "-" + random.Hex(12) + "\",\"email\":\"customer" +
         random.Digits(6) + "@example.com\",\"name\":\"Customer " + random.Alnum(8) +
         "\",\"loyaltyTier\":\"" + std::string(random.Below(2) ? "gold" : "none") + "\"}";
  out += ",\"items\":[";
  const size_t items = 1 + random.Below(5);
  for (size_t i = 0; i < items; ++i) {
    if (i) out += ",";
    const std::string quantity =
        mutation == 1 && i == 0 ? "0" : std::to_string(1 + random.Below(20));
    out += "{\"sku\":\"" + random.Upper(3) + "-" + random.Digits(4 + random.Below(5)) +
           "\",\"quantity\":" + quantity +
           ",\"unitPrice\":{\"amount\":" + std::to_string(random.Below(100000)) +
           ",\"currency\":\"" + currency + "\"}" +
           (random.Below(4) == 0 ? ",\"giftWrap\":true" : "") + "}";
  }
  out += "]";
  if (random.Below(3) != 0) {
    out += ",\"shippingAddress\":{\"line1\":\"" + random.Digits(3) + " Main Street\",\"city\":\"" +
           random.Upper(1) + random.Alnum(7) + "\",\"postalCode\":\"" + random.Digits(5) +
           "\",\"country\":\"" + random.Upper(2) + "\"}";
  }
  switch (mutation == 2 ? 3 : random.Below(3)) {
    case 0:
      out += ",\"payment\":{\"method\":\"card\",\"last4\":\"" + random.Digits(4) +
             "\",\"network\":\"visa\"}";
      break;
    case 1:
      out += ",\"payment\":{\"method\":\"bank_transfer\",\"iban\":\"DE" + random.Digits(2) +
             random.Digits(18) + "\"}";
      break;
    case 2:
      out += ",\"payment\":{\"method\":\"wallet\",\"provider\":\"paypal\"}";
      break;
    default:  // matches no oneOf branch
      out += ",\"payment\":{\"method\":\"cash\"}";
      break;
  }
  if (random.Below(2) == 0) {
    out += ",\"discountCodes\":[\"" + random.Upper(6) + "\",\"" + random.Digits(8) + "\"]";
  }
  if (mutation == 3) out += ",\"unexpected\":true";  // additionalProperties: false
  if (mutation == 4) out += ",\"notes\":42";         // notes must be a string
  out += "}";
  return out;
}

struct Workload {
  std::string name;
  std::string_view schema;
  std::vector<std::string> instances;
};

std::vector<Workload> MakeWorkloads() {
  std::vector<Workload> workloads = {{"orders_v1", kOrdersV1, {}},
                                     {"orders_v2", kOrdersV2, {}},
                                     {"order_placed", kOrderPlaced, {}}};
  for (size_t w = 0; w < workloads.size(); ++w) {
    Random random(42 + w);
    for (size_t i = 0; i < kInstanceCount; ++i) {
      workloads[w].instances.push_back(w == 2 ? OrderPlaced(random, i)
                                              : StatusChanged(random, i, w == 1));
    }
  }
  return workloads;
}

const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> workloads = MakeWorkloads();
  return workloads;
}

int WriteData(const std::string& dir) {
  for (const Workload& workload : Workloads()) {
    std::ofstream schema(dir + "/" + workload.name + ".schema.json");
    schema << workload.schema << "\n";
    std::ofstream instances(dir + "/" + workload.name + ".ndjson");
    for (const std::string& line : workload.instances) instances << line << "\n";
    if (!schema || !instances) {
      std::fprintf(stderr, "cannot write to %s\n", dir.c_str());
      return 2;
    }
  }
  return 0;
}

// Parse + IsValid per instance, cycling over the workload's instances (what a consumer does).
void BM_IsValid(benchmark::State& state, size_t index, bool format_assertion) {
  const Workload& workload = Workloads()[index];
  evident::schema::Registry registry;
  evident::schema::CompileOptions options;
  options.format_assertion = format_assertion;
  auto schema = evident::schema::Schema::Compile(workload.schema, registry, options);
  if (!schema.ok()) {
    state.SkipWithError(schema.status().ToString().c_str());
    return;
  }
  std::vector<simdjson::padded_string> inputs;
  for (const std::string& line : workload.instances) inputs.emplace_back(line);
  simdjson::dom::parser parser;
  size_t i = 0, valid = 0, total = 0;
  for (auto _ : state) {
    simdjson::dom::element instance;
    if (parser.parse(inputs[i]).get(instance) == simdjson::SUCCESS &&
        (*schema)->IsValid(instance)) {
      ++valid;
    }
    ++total;
    if (++i == inputs.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(total));
  state.counters["valid_fraction"] =
      total == 0 ? 0.0 : static_cast<double>(valid) / static_cast<double>(total);
}

// Parse + Validate with error collection (the CLI path); invalid instances build errors.
void BM_Validate(benchmark::State& state, size_t index) {
  const Workload& workload = Workloads()[index];
  evident::schema::Registry registry;
  evident::schema::CompileOptions options;
  options.format_assertion = true;
  auto schema = evident::schema::Schema::Compile(workload.schema, registry, options);
  if (!schema.ok()) {
    state.SkipWithError(schema.status().ToString().c_str());
    return;
  }
  std::vector<simdjson::padded_string> inputs;
  for (const std::string& line : workload.instances) inputs.emplace_back(line);
  simdjson::dom::parser parser;
  size_t i = 0;
  for (auto _ : state) {
    simdjson::dom::element instance;
    if (parser.parse(inputs[i]).get(instance) == simdjson::SUCCESS) {
      benchmark::DoNotOptimize((*schema)->Validate(instance));
    }
    if (++i == inputs.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_Compile(benchmark::State& state) {
  evident::schema::Registry registry;
  for (auto _ : state) {
    auto schema = evident::schema::Schema::Compile(kOrderPlaced, registry, {});
    benchmark::DoNotOptimize(schema.ok());
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--write-data=", 13) == 0) return WriteData(argv[i] + 13);
  }
  for (size_t w = 0; w < Workloads().size(); ++w) {
    const std::string& name = Workloads()[w].name;
    benchmark::RegisterBenchmark(("IsValid/" + name).c_str(), BM_IsValid, w, true);
    benchmark::RegisterBenchmark(("IsValidFormatAnnotation/" + name).c_str(), BM_IsValid, w, false);
    benchmark::RegisterBenchmark(("Validate/" + name).c_str(), BM_Validate, w);
  }
  benchmark::RegisterBenchmark("Compile/order_placed", BM_Compile);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
