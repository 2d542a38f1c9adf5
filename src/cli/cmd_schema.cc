// cli/cmd_schema.cc — `evident schema validate`: validate NDJSON instances against a schema.
//
// One output line per input instance: {"index":N,"valid":bool,"errors":[...]} with errors in the
// JSON Schema "basic" output shape. Exit 0 when every instance is valid, 1 when any is invalid,
// 2 when the schema does not compile or on usage/IO errors. A line that is not JSON is an
// invalid instance with an error, never a crash. Blank lines are skipped and get no index.
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "evident/schema.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

constexpr size_t kSchemaBytesMax = 16u << 20;
constexpr size_t kLineBytesMaxDefault = 64u << 20;

struct ValidateArgs {
  std::string schema_path;
  std::string draft = "2020-12";
  std::vector<std::string> remotes;
  bool format_assertion = false;
  size_t errors_max = 16;
  size_t line_bytes_max = kLineBytesMaxDefault;
  uint64_t validation_steps_max = schema::CompileOptions{}.validation_steps_max;
  std::string instances_path = "-";
};

// "schema" is shared with sibling sub-subcommands (e.g. `schema check`) added elsewhere.
CLI::App* SchemaCommand(CLI::App& app) {
  auto found = app.get_subcommands([](CLI::App* sub) { return sub->get_name() == "schema"; });
  if (!found.empty()) return found.front();
  CLI::App* schema = app.add_subcommand("schema", "Payload schemas: validate, check, ...");
  schema->require_subcommand(1);
  return schema;
}

void WriteResult(std::string& out, size_t index, const schema::Output& output) {
  json::Writer writer(out);
  writer.BeginObject().Key("index").Uint(index).Field("valid", output.valid);
  writer.Key("errors").BeginArray();
  for (const schema::Error& error : output.errors) {
    writer.BeginObject()
        .Field("instanceLocation", error.instance_location)
        .Field("keywordLocation", error.keyword_location)
        .Field("absoluteKeywordLocation", error.absolute_keyword_location)
        .Field("error", error.error)
        .EndObject();
  }
  writer.EndArray();
  if (output.errors_truncated) writer.Field("errorsTruncated", true);
  if (output.budget_exceeded) writer.Field("budgetExceeded", true);
  writer.EndObject();
  out.push_back('\n');
}

// The schema of `args`, compiled with its remotes and its own directory; null (said on standard
// error) when it cannot be.
std::shared_ptr<const schema::Schema> CompileSchemaArg(const ValidateArgs& args) {
  auto dialect = schema::ParseDialect(args.draft);
  if (!dialect.ok()) {
    std::cerr << "evident schema validate: " << dialect.status().message() << "\n";
    return nullptr;
  }
  schema::Registry registry;
  for (const std::string& remote : args.remotes) {
    const size_t equals = remote.find('=');
    if (equals == std::string::npos) {
      std::cerr << "evident schema validate: --remote expects PREFIX=DIR, got " << remote << "\n";
      return nullptr;
    }
    if (Status status = registry.AddDirectory(remote.substr(0, equals), remote.substr(equals + 1));
        !status.ok()) {
      std::cerr << "evident schema validate: " << status.message() << "\n";
      return nullptr;
    }
  }
  auto schema_text = ReadFileToString(args.schema_path, kSchemaBytesMax);
  if (!schema_text.ok()) {
    std::cerr << "evident schema validate: " << schema_text.status().ToString() << "\n";
    return nullptr;
  }
  // The schema's own directory serves relative references to sibling schema files.
  std::error_code ignored;
  const std::filesystem::path absolute = std::filesystem::absolute(args.schema_path, ignored);
  const std::string base_uri = "file://" + absolute.generic_string();
  (void)registry.AddDirectory("file://" + absolute.parent_path().generic_string() + "/",
                              absolute.parent_path().string());
  schema::CompileOptions options;
  options.default_dialect = *dialect;
  options.format_assertion = args.format_assertion;
  options.validation_steps_max = args.validation_steps_max;
  auto compiled = schema::Schema::Compile(*schema_text, registry, options, base_uri);
  if (!compiled.ok()) {
    std::cerr << "evident schema validate: schema does not compile: "
              << compiled.status().ToString() << "\n";
    return nullptr;
  }
  return std::move(compiled).value();
}

int RunValidate(const ValidateArgs& args) {
  const std::shared_ptr<const schema::Schema> compiled = CompileSchemaArg(args);
  if (compiled == nullptr) return kExitUsage;
  std::ifstream file;
  NoteTerminalInput(args.instances_path, "schema validate");
  std::istream* in = OpenInput(args.instances_path, file);
  if (in == nullptr) {
    std::cerr << "evident schema validate: cannot open " << args.instances_path << "\n";
    return kExitUsage;
  }
  simdjson::dom::parser parser;
  std::string line, out;
  size_t index = 0;
  bool all_valid = true;
  while (ReadLineBounded(*in, line, args.line_bytes_max)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    schema::Output output;
    simdjson::dom::element instance;
    if (line.size() > args.line_bytes_max) {
      output.valid = false;
      output.errors.push_back(
          {"", "", "", "line is longer than " + std::to_string(args.line_bytes_max) + " bytes"});
    } else if (auto error = parser.parse(line).get(instance); error) {
      output.valid = false;
      output.errors.push_back(
          {"", "", "", std::string("not JSON: ") + simdjson::error_message(error)});
    } else {
      output = compiled->Validate(instance, args.errors_max);
    }
    all_valid &= output.valid;
    WriteResult(out, index++, output);
    if (out.size() > (1u << 16)) {
      if (!WriteStdout(out)) return kExitUsage;  // main() names the error
      out.clear();
    }
  }
  if (!WriteStdout(out)) return kExitUsage;
  if (in->bad()) {
    std::cerr << "evident schema validate: error reading " << args.instances_path << "\n";
    return kExitUsage;
  }
  return all_valid ? kExitOk : kExitNegative;
}

}  // namespace

void AddSchemaCommand(CLI::App& app, Runner& run) {
  CLI::App* schema = SchemaCommand(app);
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* validate =
      schema->add_subcommand("validate", "Validate NDJSON instances against a JSON Schema");
  validate->add_option("--schema", args->schema_path, "Schema file (JSON)")->required();
  validate->add_option("--draft", args->draft, "Dialect when the schema has no $schema")
      ->check(CLI::IsMember({"2020-12", "7"}))
      ->capture_default_str();
  validate
      ->add_option("--remote", args->remotes,
                   "PREFIX=DIR: serve $ref URIs under PREFIX from files in DIR (repeatable)")
      ->allow_extra_args(false);  // one value per occurrence: never the instances argument
  validate->add_flag("--format-assertion", args->format_assertion,
                     "Treat \"format\" as an assertion, not an annotation");
  validate->add_option("--errors-max", args->errors_max, "Errors reported per instance")
      ->check(IntegerFrom(1, 1'000'000))
      ->capture_default_str();
  validate
      ->add_option("--line-bytes-max", args->line_bytes_max,
                   "Longest instance line read; a longer one is an invalid instance")
      ->check(IntegerFrom(1, int64_t{1} << 40))
      ->capture_default_str();
  validate
      ->add_option("--validation-steps-max", args->validation_steps_max,
                   "Work one instance may cost (docs/json-schema.md); beyond it the instance is "
                   "invalid with \"budgetExceeded\":true")
      ->check(IntegerFrom(1, int64_t{1} << 50))
      ->capture_default_str();
  validate->add_option("instances", args->instances_path, "NDJSON file, or - for stdin")
      ->capture_default_str();
  validate->callback([&run, args] { run = [args] { return RunValidate(*args); }; });
}

}  // namespace evident::cli
