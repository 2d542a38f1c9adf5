// `evident config check`: every problem of an evident.yaml at once (CheckConfig, config.h).
#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "adapter/yaml_json.h"
#include "config/problem.h"
#include "contract/contract_yaml.h"
#include "evident/adapter.h"
#include "evident/compat.h"
#include "evident/config.h"
#include "evident/schema.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident {
namespace config {
namespace {

// The number at `text[at]` up to `end`, or -1 when those are not all digits.
int64_t DigitsAt(const std::string& text, size_t at, size_t end) {
  if (end <= at || end - at > 9) return -1;
  int64_t n = 0;
  for (size_t i = at; i < end; ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) return -1;
    n = n * 10 + (text[i] - '0');
  }
  return n;
}

}  // namespace

ConfigProblem ProblemFromMessage(std::string code, const std::string& origin,
                                 const std::string& message) {
  ConfigProblem problem{std::move(code), origin, 0, message};
  // "FILE:LINE: what" (FILE may be another than origin: a contract file of the directory).
  const size_t colon = message.find(':');
  if (colon == std::string::npos || colon == 0) return problem;
  const size_t after = message.find(": ", colon);
  if (after == colon) {  // "FILE: what", perhaps yaml-cpp's "... error at line N, column C: "
    problem.file = message.substr(0, colon);
    problem.message = message.substr(colon + 2);
    constexpr std::string_view kAt = "error at line ";
    const size_t at = problem.message.find(kAt);
    if (at != std::string::npos) {
      const size_t from = at + kAt.size();
      problem.line =
          std::max<int64_t>(0, DigitsAt(problem.message, from, problem.message.find(',', from)));
    }
    return problem;
  }
  const int64_t line = after == std::string::npos ? -1 : DigitsAt(message, colon + 1, after);
  if (line < 0) return problem;
  problem.file = message.substr(0, colon);
  problem.line = line;
  problem.message = message.substr(after + 2);
  return problem;
}

}  // namespace config

namespace {

namespace fs = std::filesystem;

constexpr size_t kConfigBytesMax = 16u << 20;
// The converted document's size: aliases can make a small file name a huge tree (the "billion
// laughs"), so the walk stops here instead of running out of time or memory.
constexpr size_t kJsonNodesMax = 1'000'000;
constexpr size_t kJsonBytesMax = size_t{64} << 20;
constexpr int kDepthMax = 64;
constexpr size_t kSchemaErrorsMax = 200;

// The document as JSON for the schema, each scalar typed by YAML 1.2's core schema as every
// reader of evident types it (adapter/yaml_json.h).
class JsonOfYaml {
 public:
  // False when the document is too large or too deep (`why` says which).
  bool Append(const YAML::Node& node, int depth, std::string& out, std::string& why) {
    if (++nodes_ > kJsonNodesMax || out.size() > kJsonBytesMax) {
      why = "it expands to more than " + std::to_string(kJsonNodesMax) + " values or " +
            std::to_string(kJsonBytesMax >> 20) +
            " MiB (aliases naming aliases?); nothing larger is checked";
      return false;
    }
    if (depth > kDepthMax) {
      why = "it nests deeper than " + std::to_string(kDepthMax) + " levels";
      return false;
    }
    if (node.IsMap()) {
      out += '{';
      bool first = true;
      for (const auto& entry : node) {
        if (!first) out += ',';
        first = false;
        json::AppendQuoted(out, entry.first.IsScalar() ? entry.first.Scalar() : std::string("?"));
        out += ':';
        if (!Append(entry.second, depth + 1, out, why)) return false;
      }
      out += '}';
    } else if (node.IsSequence()) {
      out += '[';
      for (size_t i = 0; i < node.size(); ++i) {
        if (i > 0) out += ',';
        if (!Append(node[i], depth + 1, out, why)) return false;
      }
      out += ']';
    } else if (node.IsScalar()) {
      Result<std::string> json = adapter::ScalarToJson(node, "");
      if (json.ok()) {
        out += *json;
      } else {
        json::AppendQuoted(out, node.Scalar());  // .inf, a huge integer: the schema judges the text
      }
    } else {
      out += "null";
    }
    return true;
  }

 private:
  size_t nodes_ = 0;
};

// The line of what a JSON Pointer into the converted document names, as far as it resolves: a
// mapping's member by its key (where an editor points), a list's item by its start.
int64_t LineOf(const YAML::Node& root, std::string_view pointer) {
  YAML::Node node;
  node.reset(root);  // a handle: assignment would write into the document
  int64_t line = root.Mark().line + 1;
  size_t at = 0;
  while (at < pointer.size() && pointer[at] == '/') {
    const size_t end = std::min(pointer.find('/', at + 1), pointer.size());
    std::string token(pointer.substr(at + 1, end - at - 1));
    for (size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i) {
      token.replace(i, 2, i + 1 < token.size() && token[i + 1] == '1' ? "/" : "~");
    }
    at = end;
    YAML::Node next;
    if (node.IsMap()) {
      for (const auto& entry : node) {
        if (entry.first.IsScalar() && entry.first.Scalar() == token) {
          line = entry.first.Mark().line + 1;
          next.reset(entry.second);
          break;
        }
      }
    } else if (node.IsSequence()) {
      const size_t index = std::strtoul(token.c_str(), nullptr, 10);
      if (index < node.size()) {
        next.reset(node[index]);
        line = next.Mark().line + 1;
      }
    }
    if (!next.IsDefined() || next.IsNull()) break;
    node.reset(next);
  }
  return std::max<int64_t>(line, 1);
}

std::shared_ptr<const schema::Schema> ConfigSchema() {
  static const std::shared_ptr<const schema::Schema> compiled = [] {
    Result<std::shared_ptr<const schema::Schema>> s =
        schema::Schema::Compile(ConfigSchemaJson(), schema::Registry(), schema::CompileOptions());
    // The schema is part of the build; config_check_test compiles it too.
    assert(s.ok());
    return s.ok() ? *s : nullptr;
  }();
  return compiled;
}

// What the schema says of the document, each problem at the line of what it concerns; the
// lines of the values it found wrong go to `pinpointed` (a missing member is its object's, which
// may hold other problems). False when the document is too large to look at further.
bool SchemaProblems(const std::string& path, const YAML::Node& root,
                    std::vector<ConfigProblem>& problems, std::vector<int64_t>& pinpointed) {
  std::string json;
  std::string why;
  if (!JsonOfYaml().Append(root, 0, json, why)) {
    problems.push_back({"CONFIG_SCHEMA", path, 0, "not checked: " + why});
    return false;
  }
  const std::shared_ptr<const schema::Schema> compiled = ConfigSchema();
  if (compiled == nullptr) return true;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return true;  // written above
  const schema::Output output = compiled->Validate(doc, kSchemaErrorsMax);
  for (const schema::Error& error : output.errors) {
    const std::string where = error.instance_location.empty() ? "/" : error.instance_location;
    ConfigProblem problem{"CONFIG_SCHEMA", path, LineOf(root, error.instance_location),
                          where + ": " + error.error};
    const bool seen = std::any_of(problems.begin(), problems.end(), [&](const ConfigProblem& p) {
      return p.line == problem.line && p.message == problem.message;
    });
    if (error.keyword_location.find("required") == std::string::npos) {
      pinpointed.push_back(problem.line);
    }
    if (!seen) problems.push_back(std::move(problem));
  }
  if (output.budget_exceeded) {
    problems.push_back({"CONFIG_SCHEMA", path, 0, "the schema check ran out of its step budget"});
  }
  return true;
}

// `contracts lint` of the contracts directory the configuration names, when it names one.
void LintProblems(const std::string& base_dir, const YAML::Node& root,
                  std::vector<ConfigProblem>& problems) {
  const YAML::Node contracts = root.IsMap() ? root["contracts"] : YAML::Node();
  if (!contracts || !contracts.IsScalar()) return;
  const fs::path named = contracts.Scalar();
  const std::string dir =
      (named.is_absolute() ? named : fs::path(base_dir) / named).lexically_normal().string();
  std::vector<LintFinding> findings;
  Result<std::vector<LintFinding>> lint = LintContractsDir(dir);
  if (lint.ok()) findings = std::move(lint).value();
  Result<std::vector<LintFinding>> adapters = LintAdapters(dir);
  if (adapters.ok()) findings.insert(findings.end(), adapters->begin(), adapters->end());
  for (const LintFinding& finding : findings) {
    // A contract file the parse could not read is one problem: lint's words for it stay.
    std::erase_if(problems, [&](const ConfigProblem& p) {
      return p.code == "CONFIG_INVALID" && p.file == finding.file;
    });
    problems.push_back({finding.code, finding.file, 0, finding.message});
  }
}

}  // namespace

std::vector<ConfigProblem> CheckConfig(const std::string& path) {
  Result<std::string> text = ReadFileToString(path, kConfigBytesMax);
  if (!text.ok()) return {{"CONFIG_UNREADABLE", path, 0, text.status().message()}};
  const std::string base = fs::path(path).parent_path().string();
  return CheckConfigText(*text, base.empty() ? "." : base, path);
}

std::vector<ConfigProblem> CheckConfigText(std::string_view yaml_text, const std::string& base_dir,
                                           const std::string& path) {
  Result<YAML::Node> root = LoadYaml(yaml_text, path);
  if (!root.ok()) {
    return {config::ProblemFromMessage("CONFIG_SYNTAX", path, root.status().message())};
  }
  std::vector<ConfigProblem> problems;
  std::vector<int64_t> pinpointed;
  // Too large to look at (aliases), or not a mapping: the schema's word is all there is to say.
  if (!SchemaProblems(path, *root, problems, pinpointed) || !root->IsMap()) return problems;
  std::vector<ConfigProblem> parsed;
  const Result<Config> config = ConfigFromYaml(yaml_text, base_dir, path, {.problems = &parsed});
  if (!config.ok() && parsed.empty()) {
    parsed.push_back(config::ProblemFromMessage("CONFIG_INVALID", path, config.status().message()));
  }
  // The schema said it first: a parse problem on the line of a value the schema found wrong
  // repeats it.
  for (ConfigProblem& problem : parsed) {
    const bool flagged =
        problem.line > 0 && problem.file == path &&
        std::find(pinpointed.begin(), pinpointed.end(), problem.line) != pinpointed.end();
    if (!flagged) problems.push_back(std::move(problem));
  }
  LintProblems(base_dir, *root, problems);
  std::stable_sort(problems.begin(), problems.end(),
                   [&](const ConfigProblem& a, const ConfigProblem& b) {
                     if ((a.file == path) != (b.file == path)) return a.file == path;
                     if (a.file != b.file) return a.file < b.file;
                     return a.line < b.line;
                   });
  return problems;
}

}  // namespace evident
