// LintAdapters: the separate check of every version adapter of a contracts directory (seed 000:
// "a new contract or an adapter with a separate check"). Each adapter's output, for every
// example its source schema gives and for generated payloads the source schema accepts, must
// validate against its target schema; each consumer's via_adapter chain must hold.
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "adapter/generate.h"
#include "evident/adapter.h"
#include "evident/compat.h"
#include "json/files.h"
#include "json/writer.h"
#include "payload/payload.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

// Generated payloads tried per adapter, on top of the source schema's examples.
constexpr size_t kGeneratedInstancesMax = 64;
constexpr uint64_t kGenerateSeed = 20260731;
// An instance quoted in a finding is cut to this many bytes.
constexpr size_t kQuotedInstanceBytesMax = 300;

std::string Quoted(const std::string& instance) {
  if (instance.size() <= kQuotedInstanceBytesMax) return instance;
  return std::string(json::Utf8Prefix(instance, kQuotedInstanceBytesMax)) + "...";
}

// The payloads to try: the examples of the source schema, then generated ones; each kept only
// when the source schema accepts it (an adapter owes nothing to payloads its input never is).
std::vector<std::string> Instances(const std::string& source_text, const schema::Schema& source) {
  std::vector<std::string> candidates;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::array examples;
  if (parser.parse(source_text).get(root) == simdjson::SUCCESS &&
      root["examples"].get(examples) == simdjson::SUCCESS) {
    for (simdjson::dom::element example : examples) {
      candidates.push_back(simdjson::to_string(example));
    }
  }
  Result<std::vector<std::string>> generated =
      adapter::GenerateInstances(source_text, kGeneratedInstancesMax, kGenerateSeed);
  if (generated.ok()) {
    for (std::string& g : *generated) candidates.push_back(std::move(g));
  }
  std::vector<std::string> kept;
  simdjson::dom::parser check;
  for (std::string& candidate : candidates) {
    simdjson::dom::element instance;
    if (check.parse(candidate).get(instance) == simdjson::SUCCESS && source.IsValid(instance)) {
      kept.push_back(std::move(candidate));
    }
  }
  return kept;
}

// Runs `chain` on each instance and checks its output against `target`: the first instance it
// fails on, or whose output `target` refuses, as a finding code and message; an empty code when
// every one passed.
std::pair<std::string, std::string> FirstFailure(const std::vector<const Adapter*>& chain,
                                                 const std::vector<std::string>& instances,
                                                 const schema::Schema& target, int64_t from,
                                                 int64_t to) {
  simdjson::dom::parser parser;
  for (const std::string& instance : instances) {
    std::string output = instance;
    for (const Adapter* adapter : chain) {
      Result<std::string> adapted = ApplyAdapter(*adapter, output);
      if (!adapted.ok()) {
        return {"ADAPTER_STEP_FAILS",
                "a valid v" + std::to_string(from) + " payload fails the adapter: " +
                    adapted.status().message() + "; payload: " + Quoted(instance)};
      }
      output = std::move(adapted).value();
    }
    simdjson::dom::element adapted;
    const schema::Output verdict = parser.parse(output).get(adapted) == simdjson::SUCCESS
                                       ? target.Validate(adapted, 1)
                                       : schema::Output{.valid = false};
    if (!verdict.valid) {
      const std::string why = verdict.errors.empty() ? std::string("it is not JSON")
                                                     : (verdict.errors[0].instance_location.empty()
                                                            ? "/"
                                                            : verdict.errors[0].instance_location) +
                                                           ": " + verdict.errors[0].error;
      return {"ADAPTER_OUTPUT_INVALID",
              "its output for a valid v" + std::to_string(from) + " payload breaks v" +
                  std::to_string(to) + "'s schema (" + why + "); payload: " + Quoted(instance) +
                  "; output: " + Quoted(output)};
    }
  }
  return {};
}

// The chain by which `consumer_id` reads the new version (ConsumerImpact::through_adapter),
// tried on `instances` of the new schema: the first failure, or an empty code.
std::pair<std::string, std::string> TryChain(const ContractsDir& dir,
                                             const std::vector<Adapter>& adapters,
                                             ContractSchemas& schemas, const std::string& type,
                                             const std::string& consumer_id,
                                             const std::vector<std::string>& instances,
                                             const ImpactReport& report) {
  if (instances.empty()) {
    return {"ADAPTER_UNCHECKED",
            "no example of the new schema and no generated payload passes it (or it does not "
            "compile on its own): give it `examples`"};
  }
  const auto found = std::find_if(dir.consumers.begin(), dir.consumers.end(),
                                  [&](const ConsumerContract& c) { return c.id == consumer_id; });
  if (found == dir.consumers.end()) return {"CONSUMER_ADAPTER_INVALID", "no such consumer"};
  ConsumerContract contract = *found;
  const Status resolved = ResolveAdapterChains(adapters, contract);
  if (!resolved.ok()) return {"CONSUMER_ADAPTER_INVALID", resolved.message()};
  const AcceptedType* accepted = contract.Find(type);
  const auto via = accepted == nullptr
                       ? std::map<int64_t, std::vector<std::string>>::const_iterator{}
                       : accepted->via_adapter.find(report.version);
  if (accepted == nullptr || via == accepted->via_adapter.end()) return {};
  std::vector<const Adapter*> chain;
  for (const std::string& id : via->second) chain.push_back(FindAdapter(adapters, id));
  Result<std::shared_ptr<const schema::Schema>> target =
      schemas.Get(dir.SchemaPath(type, chain.back()->to));
  if (!target.ok()) return {"SCHEMA_MISSING", target.status().message()};
  return FirstFailure(chain, instances, **target, report.version, chain.back()->to);
}

class AdapterLinter {
 public:
  AdapterLinter(const ContractsDir& dir, ContractSchemas& schemas) : dir_(dir), schemas_(schemas) {}
  std::vector<LintFinding> Run();

 private:
  void Add(std::string code, std::string file, std::string message) {
    findings_.push_back({std::move(code), std::move(file), std::move(message)});
  }
  void Read(const std::string& file);
  void Exercise(const Adapter& adapter, const std::string& file);

  const ContractsDir& dir_;
  ContractSchemas& schemas_;
  std::vector<LintFinding> findings_;
  std::vector<Adapter> adapters_;
  std::map<std::string, std::string> file_by_id_;
};

void AdapterLinter::Read(const std::string& file) {
  Result<std::string> text = ReadFileToString(file, kAdapterBytesMax);
  if (!text.ok()) return Add("ADAPTER_UNREADABLE", file, text.status().ToString());
  Result<Adapter> adapter = AdapterFromYaml(*text, file);
  if (!adapter.ok()) return Add("ADAPTER_INVALID", file, adapter.status().message());
  if (fs::path(file).stem().string() != adapter->id) {
    Add("ADAPTER_ID_MISMATCH", file,
        "the file is named " + fs::path(file).filename().string() + " but the adapter's id is '" +
            adapter->id + "'");
  }
  if (const auto [it, inserted] = file_by_id_.emplace(adapter->id, file); !inserted) {
    return Add("DUPLICATE_ADAPTER_ID", file,
               "adapter id '" + adapter->id + "' is also declared in " + it->second);
  }
  adapters_.push_back(std::move(adapter).value());
}

// Runs the adapter on every payload its source schema accepts that lint has (examples and
// generated ones); the first one it fails on, or whose result the target schema refuses, is
// the finding.
void AdapterLinter::Exercise(const Adapter& adapter, const std::string& file) {
  const std::string from_path = dir_.SchemaPath(adapter.type, adapter.from);
  const std::string to_path = dir_.SchemaPath(adapter.type, adapter.to);
  for (const auto& [version, path] : {std::pair{adapter.from, from_path}, {adapter.to, to_path}}) {
    if (path.empty()) {
      return Add("ADAPTER_SCHEMA_MISSING", file,
                 adapter.type + " v" + std::to_string(version) + " has no schema (" + adapter.type +
                     "/v" + std::to_string(version) + ".schema.json)");
    }
  }
  Result<std::shared_ptr<const schema::Schema>> source = schemas_.Get(from_path);
  Result<std::shared_ptr<const schema::Schema>> target = schemas_.Get(to_path);
  Result<std::string> source_text = ReadFileToString(from_path, size_t{16} << 20);
  if (!source.ok() || !target.ok() || !source_text.ok()) return;  // the schema lint reports it
  const std::vector<std::string> instances = Instances(*source_text, **source);
  if (instances.empty()) {
    return Add("ADAPTER_UNCHECKED", file,
               "no example of " + adapter.type + " v" + std::to_string(adapter.from) +
                   " and no generated payload passes its schema: give the schema `examples`");
  }
  auto [code, message] = FirstFailure({&adapter}, instances, **target, adapter.from, adapter.to);
  if (!code.empty()) Add(std::move(code), file, std::move(message));
}

std::vector<LintFinding> AdapterLinter::Run() {
  for (const std::string& file : dir_.adapter_files) Read(file);
  for (const Adapter& adapter : adapters_) Exercise(adapter, file_by_id_.at(adapter.id));
  for (const ConsumerContract& consumer : dir_.consumers) {
    ConsumerContract copy = consumer;
    const Status resolved = ResolveAdapterChains(adapters_, copy);
    if (!resolved.ok()) {
      Add("CONSUMER_ADAPTER_INVALID", dir_.path + "/consumers/" + consumer.id + ".yaml",
          resolved.message());
    }
  }
  return std::move(findings_);
}

}  // namespace

Result<std::vector<LintFinding>> LintAdapters(const std::string& dir) {
  ContractsDir contracts;
  {
    Result<ContractsDir> loaded = LoadContractsDir(dir);
    // A directory whose consumer contracts do not load is reported by LintContractsDir; its
    // adapters are checked once they do.
    if (loaded.ok()) {
      contracts = std::move(loaded).value();
    } else if (loaded.status().code() == Code::kNotFound) {
      return loaded.status();
    } else {
      return std::vector<LintFinding>{};
    }
  }
  EVIDENT_ASSIGN_OR_RETURN(ContractSchemas schemas, ContractSchemas::Open(dir));
  AdapterLinter linter(contracts, schemas);
  return linter.Run();
}

Status CheckImpactThroughAdapters(const ContractsDir& contracts, std::string_view new_schema_json,
                                  ImpactReport& report) {
  bool any = false;
  for (const ConsumerImpact& impact : report.consumers) any |= !impact.through_adapter.empty();
  if (!any) return Status::Ok();
  EVIDENT_ASSIGN_OR_RETURN(const std::vector<Adapter> adapters, LoadAdapters(contracts));
  EVIDENT_ASSIGN_OR_RETURN(ContractSchemas schemas,
                           ContractSchemas::Open(contracts.path, contracts.env));
  const Result<std::shared_ptr<const schema::Schema>> proposed =
      schema::Schema::Compile(new_schema_json, schema::Registry(), schema::CompileOptions{});
  const std::vector<std::string> instances =
      proposed.ok() ? Instances(std::string(new_schema_json), **proposed)
                    : std::vector<std::string>{};
  report.all_safe = true;
  for (ConsumerImpact& impact : report.consumers) {
    if (!impact.through_adapter.empty()) {
      const auto [code, message] =
          TryChain(contracts, adapters, schemas, report.type, impact.consumer, instances, report);
      if (!code.empty()) {
        impact.safe = false;
        impact.reasons.push_back({"", code, 0, impact.through_adapter + ": " + message});
        impact.through_adapter.clear();
      }
    }
    report.all_safe = report.all_safe && impact.safe;
  }
  return Status::Ok();
}

}  // namespace evident
