// compat/schema_doc.h — one parsed JSON Schema document: dialect, `$ref` resolution, and views
// of subschemas with their references followed.
//
// Only references inside the document resolve: JSON Pointer fragments (`#/$defs/x`,
// `#/definitions/x`), `$anchor`s (and draft 7's `"$id": "#name"`), embedded `$id`s and the root
// `$id` itself. Anything else (another file, a URL) is left unresolved and compared by its
// text: evident never fetches. Immutable after Parse; safe to share between threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compat/json_tree.h"
#include "evident/compat.h"
#include "evident/status.h"

namespace evident::compat {

enum class Dialect { kDraft7, kDraft2020 };

// A subschema with its `$ref` chain followed. `value` is the final target (an object or a
// boolean); `sites` are the objects that referred to it, outermost first. Keywords beside `$ref`
// apply as well: all of them in 2020-12, only annotations (x-*, title, description, ...) in
// draft 7, where siblings of `$ref` are ignored by validation.
struct Node {
  const JsonValue* value = nullptr;
  std::string pointer;  // schema pointer of `value`
  std::vector<const JsonValue*> sites;
  std::string unresolved_ref;  // the text of a `$ref` that points outside the document
  Dialect dialect = Dialect::kDraft2020;

  bool IsFalse() const { return value->IsBool() && !value->boolean && sites.empty(); }
  // The keyword `name` as seen through the reference sites, or nullptr.
  const JsonValue* Keyword(std::string_view name) const;
  // The schema pointer where Keyword(name) was found (for messages), or `pointer`.
  std::string KeywordPointer(std::string_view name) const;

  std::vector<std::string> site_pointers;  // parallel to `sites`
};

// Why SchemaDocument::Parse refused a document, for callers that report it by kind (lint).
enum class SchemaProblem {
  kNone,
  kTooLarge,       // over schema_bytes_max
  kNotJson,        // not JSON, not I-JSON (a member name twice), or nested too deep
  kNotSchema,      // JSON, but neither an object nor a boolean
  kUnsupported,    // a `$schema` that is not a string or names an unsupported dialect
  kUnresolvedRef,  // a local `$ref` that does not resolve
};

class SchemaDocument {
 public:
  // Parses and indexes `text`; fails when it is not JSON, not a schema, names an unsupported
  // `$schema`, or holds a local `$ref` that does not resolve. `origin` names it in messages;
  // `problem`, when given, receives the kind of failure (kNone on success).
  static Result<std::unique_ptr<SchemaDocument>> Parse(std::string_view text,
                                                       std::string_view origin,
                                                       const DiffOptions& options,
                                                       SchemaProblem* problem = nullptr);

  const JsonValue& root() const { return *root_; }

  // The view of `value` (found at schema pointer `pointer`) with its `$ref`s followed. A null
  // `value` stands for an absent keyword, i.e. the schema `true`. Fails when a local reference
  // does not resolve or references only each other.
  Result<Node> View(const JsonValue* value, std::string pointer) const;

 private:
  struct Target {
    const JsonValue* value = nullptr;
    std::string pointer;
  };
  // Resolves `ref`: a target, an empty target for an external reference, or an error.
  Result<Target> ResolveRef(std::string_view ref) const;
  void Index(const JsonValue& value, const std::string& pointer, int64_t depth);
  // Fails on the first local `$ref` (in document order) that does not resolve.
  Status CheckRefs(const JsonValue& value, const std::string& pointer) const;

  std::unique_ptr<JsonValue> root_;
  Dialect dialect_ = Dialect::kDraft2020;
  std::string origin_;
  std::string base_id_;                         // root $id without its fragment
  std::map<std::string, std::string> anchors_;  // "#name" or embedded $id -> schema pointer
};

// Where a data pointer leads in a schema (AnalyzeImpact and lint).
struct FieldLookup {
  bool defined = false;
  bool required = false;             // every step from the root is required
  const JsonValue* value = nullptr;  // the field's subschema (before `$ref`)
  std::string pointer;               // its schema pointer
};
Result<FieldLookup> LookupField(const SchemaDocument& doc, std::string_view data_pointer);

// x-unit, x-currency, x-rounding, x-meaning: a change of any of them changes the contract.
bool IsMeaningKeyword(std::string_view name);

}  // namespace evident::compat
