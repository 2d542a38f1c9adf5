// bench/valijson_peer.cc — valijson (Debian libvalijson-dev, RapidJSON adapter) on the same data
// as schema_bench, one core. Built and run by bench/schema_peers.sh, not by CMake.
// Usage: valijson_peer DATA_DIR WORKLOAD... ; prints one JSON line per workload.
// RapidJSON parsing of each instance is inside the timed loop.
#include <rapidjson/document.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <valijson/adapters/rapidjson_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string dir = argv[1];
  for (int w = 2; w < argc; ++w) {
    const std::string name = argv[w];
    std::ifstream schema_file(dir + "/" + name + ".schema.json");
    std::stringstream schema_text;
    schema_text << schema_file.rdbuf();
    rapidjson::Document schema_doc;
    schema_doc.Parse(schema_text.str().c_str());
    valijson::Schema schema;
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::RapidJsonAdapter schema_adapter(schema_doc);
    parser.populateSchema(schema_adapter, schema);
    std::vector<std::string> lines;
    std::ifstream instances(dir + "/" + name + ".ndjson");
    for (std::string line; std::getline(instances, line);) {
      if (!line.empty()) lines.push_back(line);
    }
    valijson::Validator validator;
    auto run = [&](size_t& valid) {
      for (const std::string& line : lines) {
        rapidjson::Document doc;
        doc.Parse(line.c_str());
        valijson::adapters::RapidJsonAdapter adapter(doc);
        if (validator.validate(schema, adapter, nullptr)) ++valid;
      }
    };
    // Per-instance verdicts, one line each ('1' valid, '0' invalid), for the agreement check.
    std::ofstream verdicts(dir + "/" + name + ".valijson.verdicts");
    for (const std::string& line : lines) {
      rapidjson::Document doc;
      doc.Parse(line.c_str());
      valijson::adapters::RapidJsonAdapter adapter(doc);
      verdicts << (validator.validate(schema, adapter, nullptr) ? "1\n" : "0\n");
    }
    verdicts.close();
    if (!verdicts) return 2;
    size_t warm = 0;
    run(warm);
    size_t valid = 0, count = 0;
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    do {
      run(valid);
      count += lines.size();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < 3.0);
    std::printf(
        "{\"validator\":\"valijson\",\"workload\":\"%s\",\"instances_per_second\":%f,"
        "\"valid_fraction\":%f}\n",
        name.c_str(), static_cast<double>(count) / seconds,
        static_cast<double>(valid) / static_cast<double>(count));
  }
  return 0;
}
