// LintContractsDir: every problem in a contracts directory, as findings rather than errors, so
// that one run reports all of them.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>

#include "compat/schema_doc.h"
#include "core/join.h"
#include "evident/compat.h"
#include "json/files.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using compat::JsonValue;
using compat::SchemaDocument;
using compat::SchemaProblem;

// The lint code of a schema file SchemaDocument::Parse refused, by the kind of refusal (never by
// its message, which names the file and may say anything).
const char* LintCodeOf(SchemaProblem problem) {
  switch (problem) {
    case SchemaProblem::kTooLarge:
      return "SCHEMA_UNREADABLE";
    case SchemaProblem::kNotJson:
      return "SCHEMA_NOT_JSON";
    case SchemaProblem::kUnsupported:
      return "SCHEMA_UNSUPPORTED";
    case SchemaProblem::kUnresolvedRef:
      return "SCHEMA_UNRESOLVED_REF";
    case SchemaProblem::kNotSchema:
      break;
    case SchemaProblem::kNone:
      assert(false && "a refused schema without a kind of problem");
      break;
  }
  return "SCHEMA_NOT_OBJECT";
}

class Linter {
 public:
  Linter(std::string dir, const DiffOptions& options) : dir_(std::move(dir)), options_(options) {}

  Status Run();
  std::vector<LintFinding> TakeFindings() { return std::move(findings_); }

 private:
  void Add(std::string code, std::string file, std::string message) {
    findings_.push_back({std::move(code), std::move(file), std::move(message)});
  }
  void LintConsumersDir(const fs::path& consumers_dir);
  void LintTypeDir(const fs::path& type_dir);
  void LintConsumer(const ConsumerContract& consumer, const std::string& file);
  // 1 when the schema of (type, version) defines `data_pointer`, 0 when it does not, -1 when
  // there is no usable schema to ask.
  int Defines(const std::string& type, int64_t version, const std::string& data_pointer);

  std::string dir_;
  const DiffOptions& options_;
  std::vector<LintFinding> findings_;
  // type -> version -> parsed schema (null when the file is unusable).
  std::map<std::string, std::map<int64_t, std::unique_ptr<SchemaDocument>>> schemas_;
  std::vector<std::pair<ConsumerContract, std::string>> consumers_;
};

std::vector<fs::path> SortedEntries(const fs::path& dir, std::error_code& ec) {
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir, ec)) entries.push_back(entry.path());
  std::sort(entries.begin(), entries.end());
  return entries;
}

Status Linter::Run() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return Status::NotFound("no contracts directory at " + dir_);
  const std::vector<fs::path> entries = SortedEntries(dir_, ec);
  if (ec) return Status::IoError("cannot list " + dir_ + ": " + ec.message());
  for (const fs::path& entry : entries) {
    if (!fs::is_directory(entry, ec)) continue;  // README files and the like belong here
    if (entry.filename().string().starts_with('.')) continue;  // .git, .github: not types
    if (entry.filename() == "consumers") {
      LintConsumersDir(entry);
    } else if (entry.filename() == "adapters") {
      continue;  // version adapters: LintAdapters (adapter.h) checks them against both schemas
    } else {
      LintTypeDir(entry);
    }
  }
  for (const auto& [consumer, file] : consumers_) LintConsumer(consumer, file);
  if (schemas_.empty() && consumers_.empty() && findings_.empty()) {
    Add("EMPTY_CONTRACTS_DIRECTORY", dir_,
        "no schema (<type>/v<N>.schema.json) and no consumer contract (consumers/<id>.yaml): "
        "nothing was checked; is this the contracts directory?");
  }
  return Status::Ok();
}

void Linter::LintConsumersDir(const fs::path& consumers_dir) {
  std::error_code ec;
  std::map<std::string, std::string> files_by_id;
  for (const fs::path& file : SortedEntries(consumers_dir, ec)) {
    const std::string name = file.string();
    if (file.extension() != ".yaml" && file.extension() != ".yml") {
      Add("UNRECOGNIZED_FILE", name, "not a consumer contract (consumers/<id>.yaml)");
      continue;
    }
    Result<std::string> text = ReadFileToString(name, kContractBytesMax);
    if (!text.ok()) {
      Add("CONSUMER_UNREADABLE", name, text.status().ToString());
      continue;
    }
    ContractProblem problem = ContractProblem::kNone;
    Result<ConsumerContract> contract = ConsumerContractFromYaml(*text, name, &problem);
    if (!contract.ok()) {
      Add(problem == ContractProblem::kDuplicateKey ? "CONSUMER_DUPLICATE_KEY" : "CONSUMER_INVALID",
          name, contract.status().message());
      continue;
    }
    if (file.stem().string() != contract->id) {
      Add("CONSUMER_ID_MISMATCH", name,
          "the file is named " + file.filename().string() + " but the contract's id is '" +
              contract->id + "'");
    }
    if (const auto [it, inserted] = files_by_id.emplace(contract->id, name); !inserted) {
      Add("DUPLICATE_CONSUMER_ID", name,
          "consumer id '" + contract->id + "' is also declared in " + it->second);
    }
    consumers_.emplace_back(std::move(contract).value(), name);
  }
}

void Linter::LintTypeDir(const fs::path& type_dir) {
  std::error_code ec;
  const std::string type = type_dir.filename().string();
  auto& versions = schemas_[type];
  for (const fs::path& file : SortedEntries(type_dir, ec)) {
    const std::string name = file.string();
    const int64_t version = SchemaVersionOfFileName(file.filename().string());
    if (version < 0) {
      Add("UNRECOGNIZED_FILE", name, "not a schema file (v<N>.schema.json)");
      continue;
    }
    if (version == 0) {
      Add("VERSION_ZERO", name, "schema versions start at 1");
      continue;
    }
    if (versions.count(version) != 0) {
      Add("DUPLICATE_VERSION", name,
          "another file already holds version " + std::to_string(version) + " of " + type);
      continue;
    }
    std::unique_ptr<SchemaDocument>& slot = versions[version];
    Result<std::string> text =
        ReadFileToString(name, static_cast<size_t>(options_.schema_bytes_max));
    if (!text.ok()) {
      Add("SCHEMA_UNREADABLE", name, text.status().ToString());
      continue;
    }
    SchemaProblem problem = SchemaProblem::kNone;
    Result<std::unique_ptr<SchemaDocument>> doc =
        SchemaDocument::Parse(*text, name, options_, &problem);
    if (!doc.ok()) {
      Add(LintCodeOf(problem), name, doc.status().message());
      continue;
    }
    if (!(*doc)->root().IsObject()) {
      Add("SCHEMA_NOT_OBJECT", name, "a payload schema must be a JSON object, not a boolean");
      continue;
    }
    // The version marker must carry the file's version.
    const std::string marker = options_.version_at.empty() ? "/schemaVersion" : options_.version_at;
    if (Result<compat::FieldLookup> field = compat::LookupField(**doc, marker);
        field.ok() && field->defined && field->value->IsObject()) {
      const JsonValue* value = field->value->Get("const");
      if (value != nullptr && value->IsNumber() && value->number != static_cast<double>(version)) {
        Add("VERSION_MARKER_MISMATCH", name,
            marker + " has const " + compat::Canonical(*value) + " in the file of version " +
                std::to_string(version));
      }
    }
    slot = std::move(doc).value();
  }
  if (versions.empty()) {
    Add("EMPTY_TYPE_DIRECTORY", type_dir.string(), "no v<N>.schema.json files for type " + type);
    return;
  }
  int64_t expected = 1;
  for (const auto& [version, doc] : versions) {
    for (; expected < version; ++expected) {
      Add("VERSION_GAP", type_dir.string(),
          "version " + std::to_string(expected) + " of " + type + " is missing (next is v" +
              std::to_string(version) + ")");
    }
    expected = version + 1;
  }
}

int Linter::Defines(const std::string& type, int64_t version, const std::string& data_pointer) {
  const auto t = schemas_.find(type);
  if (t == schemas_.end()) return -1;
  const auto v = t->second.find(version);
  if (v == t->second.end() || v->second == nullptr) return -1;
  Result<compat::FieldLookup> field = compat::LookupField(*v->second, data_pointer);
  return field.ok() && field->defined ? 1 : 0;
}

void Linter::LintConsumer(const ConsumerContract& consumer, const std::string& file) {
  for (const AcceptedType& accepted : consumer.accepts) {
    const auto t = schemas_.find(accepted.type);
    if (t == schemas_.end()) {
      Add("UNKNOWN_TYPE", file,
          "consumer '" + consumer.id + "' accepts type " + accepted.type +
              ", which has no schema directory " + accepted.type + "/");
      continue;
    }
    for (const int64_t version : accepted.versions) {
      if (t->second.count(version) == 0) {
        Add("MISSING_SCHEMA_VERSION", file,
            "consumer '" + consumer.id + "' accepts " + accepted.type + " version " +
                std::to_string(version) + ", which has no " + accepted.type + "/v" +
                std::to_string(version) + ".schema.json");
      }
    }
    std::vector<std::string> pointers = accepted.reads;
    const auto add_data_pointer = [&](const std::string& pointer) {
      if (pointer.starts_with("/data/")) pointers.push_back(pointer.substr(5));
    };
    add_data_pointer(consumer.schema_version_at);
    add_data_pointer(consumer.ordering.subject_at);
    add_data_pointer(consumer.ordering.version_at);
    for (size_t i = 0; i < pointers.size(); ++i) {
      const bool is_read = i < accepted.reads.size();
      std::vector<int64_t> missing;
      int usable = 0;
      int64_t first_defining = INT64_MAX;
      for (const int64_t version : accepted.versions) {
        const int defines = Defines(accepted.type, version, pointers[i]);
        if (defines < 0) continue;
        ++usable;
        if (defines == 0) missing.push_back(version);
        if (defines == 1) first_defining = std::min(first_defining, version);
      }
      if (usable == 0 || missing.empty()) continue;
      // A member a later version added (seed 000's optional paymentReference of v2) is absent
      // from the versions before it: the reader's rule for its absence (a projection's
      // `defaults`) handles them. One a later version no longer defines is a finding.
      const bool added_later = std::all_of(missing.begin(), missing.end(),
                                           [&](int64_t v) { return v < first_defining; });
      if (is_read && static_cast<int>(missing.size()) < usable && added_later) continue;
      const std::string versions = JoinEach(missing, [](int64_t v) { return std::to_string(v); });
      const std::string what = is_read ? "reads " : "takes its schema version or ordering from ";
      if (static_cast<int>(missing.size()) == usable) {
        Add(is_read ? "READ_POINTER_UNDEFINED" : "ENVELOPE_POINTER_UNDEFINED", file,
            "consumer '" + consumer.id + "' " + what + pointers[i] + " of " + accepted.type +
                ", which no accepted schema version defines");
      } else {
        Add("READ_POINTER_NOT_IN_EVERY_VERSION", file,
            "consumer '" + consumer.id + "' " + what + pointers[i] + " of " + accepted.type +
                ", which accepted version(s) " + versions + " do not define");
      }
    }
  }
}

}  // namespace

Result<std::vector<LintFinding>> LintContractsDir(const std::string& dir,
                                                  const DiffOptions& options) {
  Linter linter(dir, options);
  EVIDENT_RETURN_IF_ERROR(linter.Run());
  return linter.TakeFindings();
}

}  // namespace evident
