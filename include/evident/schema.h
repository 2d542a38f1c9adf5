// evident/schema.h — JSON Schema (2020-12 and draft 7) compiled into a validation plan.
//
// A Schema is compiled once from a schema document plus a local Registry of other documents it
// may reference, then validates many instances. Compilation resolves every $ref, $anchor and $id
// up front, translates each pattern to RE2 (linear-time matching) and rejects what cannot be
// honoured (a pattern RE2 cannot express, a $ref cycle that never consumes the instance, an
// unknown required vocabulary). References are resolved only from the Registry and the built-in
// meta-schemas: nothing is ever fetched from the network.
//
// Thread-safety: a Registry is not synchronized (fill it, then compile). A compiled Schema is
// immutable; IsValid and Validate are const and may run concurrently from many threads.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident {
class Env;  // evident/env.h
}  // namespace evident

namespace evident::schema {

enum class Dialect { kDraft2020_12, kDraft7 };

// Parses "2020-12" or "7" (also "draft7", "draft-07", "draft2020-12").
Result<Dialect> ParseDialect(std::string_view name);

struct CompileOptions {
  // Dialect of a schema without "$schema". Default: 2020-12.
  Dialect default_dialect = Dialect::kDraft2020_12;
  // When true, "format" is an assertion (invalid formats fail validation); when false it is an
  // annotation only, as both drafts specify by default. Default: false.
  bool format_assertion = false;
  // Nested schema evaluations allowed while validating one instance; deeper instances (or
  // dynamic recursion) are reported invalid instead of exhausting the stack. Default: 512.
  size_t validation_depth_max = 512;
  // Work one instance may cost, in steps: one subschema evaluated against one value, one object
  // member or array item scanned by a keyword, one enum value compared, or 64 bytes of string
  // matched. Beyond it the instance is invalid with Output::budget_exceeded set (fail closed),
  // so no schema/instance pair can take unbounded time. Results of subschemas reached more than
  // once are memoized per instance location, so ordinary schemas stay far below it: the budget
  // stops what memoization cannot shorten (and $dynamicRef schemas, which are not memoized).
  // Default: 10,000,000 (about a second of work in the worst case).
  uint64_t validation_steps_max = 10'000'000;
  // Compiled subschemas in one plan. Default: 200,000.
  size_t schema_nodes_max = 200'000;
  // Documents (the root plus referenced registry documents) one compilation may load. Default: 256.
  size_t documents_max = 256;
  // Size of any single schema document. Default: 16 MiB.
  size_t schema_bytes_max = 16u << 20;
  // Memory RE2 may use for one compiled pattern. Default: 1 MiB.
  size_t regex_program_bytes_max = 1u << 20;
};

// Schema documents that $ref / $schema may point to, by absolute URI. Local only.
class Registry {
 public:
  // Registers `schema_json` under `uri` (its "$id" may name further resources inside it).
  Status Add(std::string uri, std::string schema_json);
  // Maps every URI below `uri_prefix` to a file below `dir`, read on first use, for example
  // "http://localhost:1234/" -> "third_party/json-schema-test-suite/remotes". Paths containing
  // ".." segments are refused. The files are read through `env` (which must outlive the
  // registry's use), the real file system when null.
  Status AddDirectory(std::string uri_prefix, std::string dir, Env* env = nullptr);

  // Looks up a document by URI (without fragment): exact registrations first, then directories.
  // Returns kNotFound when nothing matches.
  Result<std::string> Load(const std::string& uri) const;

 private:
  std::map<std::string, std::string> documents_;
  struct Directory {
    std::string uri_prefix;
    std::string dir;
    Env* env;
  };
  std::vector<Directory> directories_;
};

// One failed assertion in the JSON Schema "basic" output shape.
struct Error {
  std::string instance_location;          // JSON Pointer into the instance
  std::string keyword_location;           // JSON Pointer of the keyword, through $ref
  std::string absolute_keyword_location;  // absolute URI of the keyword
  std::string error;                      // human-readable message
};

struct Output {
  bool valid = true;
  std::vector<Error> errors;      // empty when valid
  bool errors_truncated = false;  // more errors existed than errors_max
  // Validation stopped after CompileOptions::validation_steps_max steps: `valid` is false because
  // the instance could not be checked within the budget, not because it was found invalid.
  bool budget_exceeded = false;
  // Work the validation took, in the units of validation_steps_max (both passes when the
  // instance is invalid).
  uint64_t steps = 0;
};

namespace internal {
struct Plan;
}

class Schema {
 public:
  // Compiles `schema_json`. `base_uri` is the retrieval URI used when the root has no "$id".
  static Result<std::shared_ptr<const Schema>> Compile(std::string_view schema_json,
                                                       const Registry& registry,
                                                       const CompileOptions& options,
                                                       std::string base_uri = "");

  // Fast path: stops at the first failure, collects nothing, does not allocate unless the
  // schema uses unevaluated*, uniqueItems, propertyNames or $dynamicRef, or the instance takes
  // enough steps for memoization to start. False when the step budget runs out (Validate tells
  // that case apart with Output::budget_exceeded).
  bool IsValid(simdjson::dom::element instance) const;

  // Full result with up to `errors_max` errors (errors_truncated tells whether more existed).
  Output Validate(simdjson::dom::element instance, size_t errors_max = 16) const;

  Dialect dialect() const;

  explicit Schema(std::unique_ptr<internal::Plan> plan);
  ~Schema();
  Schema(const Schema&) = delete;
  Schema& operator=(const Schema&) = delete;

 private:
  std::unique_ptr<internal::Plan> plan_;
};

}  // namespace evident::schema
