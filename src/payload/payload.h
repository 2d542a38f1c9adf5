// payload/payload.h — the payload step shared by the consumer pipeline and the outbox: the
// contracts directory's schemas compiled once each, and the check of an event's payload against
// one of them, with the reason codes of docs/consume.md.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "evident/envelope.h"
#include "evident/schema.h"
#include "evident/status.h"

namespace evident {

// The payload schemas of one contracts directory; they may $ref each other by relative path
// inside it. Each file is compiled once, however many consumers or types name it.
class ContractSchemas {
 public:
  // The files are read through `env` (the real file system when null), which must outlive the
  // calls of Get.
  static Result<ContractSchemas> Open(const std::string& contracts_dir, Env* env = nullptr);
  // The compiled schema of the file at `path` (a file of the directory).
  Result<std::shared_ptr<const schema::Schema>> Get(const std::string& path);

 private:
  schema::Registry registry_;
  Env* env_ = nullptr;
  std::map<std::string, std::shared_ptr<const schema::Schema>> compiled_;  // by path
};

// What the payload step made of an event: valid, or the reason code, the message and the
// schema's errors ("instanceLocation: error (keywordLocation)"), at most errors_max of them.
struct PayloadVerdict {
  bool valid = true;
  std::string reason;  // binary-payload, schema-violation, validation-budget-exceeded
  std::string message;
  std::vector<std::string> errors;
};

// Checks the payload of `event` (type and `schema_version` name `payload_schema`).
PayloadVerdict CheckPayload(const schema::Schema& payload_schema, const EventView& event,
                            int64_t schema_version, size_t errors_max);

}  // namespace evident
