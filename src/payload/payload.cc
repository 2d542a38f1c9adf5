// The payload step shared by the consumer pipeline and the outbox (payload/payload.h).
#include "payload/payload.h"

#include <filesystem>

#include "json/files.h"

namespace evident {

Result<ContractSchemas> ContractSchemas::Open(const std::string& contracts_dir, Env* env) {
  namespace fs = std::filesystem;
  const std::string root = fs::absolute(contracts_dir).lexically_normal().string();
  ContractSchemas schemas;
  schemas.env_ = env;
  EVIDENT_RETURN_IF_ERROR(schemas.registry_.AddDirectory("file://" + root + "/", root, env));
  return schemas;
}

Result<std::shared_ptr<const schema::Schema>> ContractSchemas::Get(const std::string& path) {
  std::shared_ptr<const schema::Schema>& schema = compiled_[path];
  if (schema) return schema;
  EVIDENT_ASSIGN_OR_RETURN(
      const std::string text,
      ReadWholeFile(EnvOr(env_), path, schema::CompileOptions{}.schema_bytes_max));
  namespace fs = std::filesystem;
  const std::string uri = "file://" + fs::absolute(path).lexically_normal().string();
  auto compiled = schema::Schema::Compile(text, registry_, {}, uri);
  if (!compiled.ok()) {
    compiled_.erase(path);
    return compiled.status().Annotate(path);
  }
  schema = std::move(compiled).value();
  return schema;
}

PayloadVerdict CheckPayload(const schema::Schema& payload_schema, const EventView& event,
                            int64_t schema_version, size_t errors_max) {
  PayloadVerdict v;
  const std::string what = std::string(event.type) + " v" + std::to_string(schema_version);
  const auto refuse = [&v](std::string reason, std::string message) {
    v.valid = false;
    v.reason = std::move(reason);
    v.message = std::move(message);
    return v;
  };
  if (event.data_base64) {
    return refuse("binary-payload", "data_base64 cannot be checked against a JSON Schema");
  }
  if (!event.data) {
    v.errors.push_back(": the event has no data");
    return refuse("schema-violation", what + " payload does not match its schema");
  }
  // Validate runs the fast pass first and collects errors only for an invalid payload.
  const schema::Output output = payload_schema.Validate(*event.data, errors_max);
  if (output.valid) return v;
  for (const schema::Error& e : output.errors) {
    v.errors.push_back((e.instance_location.empty() ? "/" : e.instance_location) + ": " + e.error +
                       " (" + e.keyword_location + ")");
  }
  if (output.budget_exceeded) {
    // Not known to be invalid: it could not be checked within the schema's step budget.
    return refuse("validation-budget-exceeded",
                  what + " payload could not be validated within validation_steps_max (" +
                      std::to_string(output.steps) + " steps used)");
  }
  return refuse("schema-violation", what + " payload does not match its schema");
}

}  // namespace evident
