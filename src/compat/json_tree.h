// compat/json_tree.h — an owned, ordered JSON tree for schema comparison.
//
// simdjson's DOM elements have no stable identity, and the diff needs one (cycle detection over
// `$ref`) plus member order (a likely rename keeps its position). Schemas are small, so the
// diff works on this copy. Immutable after parsing; safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/status.h"

namespace evident::compat {

struct JsonMember;

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  bool is_integer = false;  // written without fraction or exponent and fits in int64
  int64_t integer = 0;
  // Written as an integer above int64's range (up to 2^64 - 1): `number` is its nearest double,
  // `unsigned_integer` the exact value, which a writer of the tree keeps (adapter/json_text.h).
  bool is_unsigned = false;
  uint64_t unsigned_integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<JsonMember> object;  // in document order

  bool IsObject() const { return kind == Kind::kObject; }
  bool IsArray() const { return kind == Kind::kArray; }
  bool IsString() const { return kind == Kind::kString; }
  bool IsBool() const { return kind == Kind::kBool; }
  bool IsNumber() const { return kind == Kind::kNumber; }
  // The member named `key` of an object, or nullptr.
  const JsonValue* Get(std::string_view key) const;
};

// One member of an object. (Not std::pair: a pair may not hold the still incomplete JsonValue.)
struct JsonMember {
  std::string name;
  JsonValue value;
};

// Parses `text`; fails on malformed JSON or nesting deeper than `nesting_depth_max`.
Result<std::unique_ptr<JsonValue>> ParseJsonTree(std::string_view text, int64_t nesting_depth_max);

// A canonical serialization: object members sorted by name, numbers that are whole printed as
// integers (JSON Schema treats 1 and 1.0 as equal). Two values are equal iff these are equal.
std::string Canonical(const JsonValue& value);

// Appends one escaped reference token ("~0", "~1") to a JSON Pointer.
std::string AppendToken(std::string_view pointer, std::string_view token);

// The value at `pointer` below `root`, or nullptr (also when `pointer` is not a JSON Pointer).
const JsonValue* Resolve(const JsonValue& root, std::string_view pointer);

}  // namespace evident::compat
