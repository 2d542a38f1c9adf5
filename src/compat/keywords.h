// compat/keywords.h — readings of schema keywords shared by the differ and the composition
// rules: instance type sets, `required` names, `const`/`enum` values, and message text.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compat/json_tree.h"
#include "compat/schema_doc.h"

namespace evident::compat {

enum TypeBit : unsigned {
  kNull = 1,
  kBoolean = 2,
  kObject = 4,
  kArray = 8,
  kNumber = 16,  // includes integer
  kInteger = 32,
  kString = 64,
  kAnyType = 127,
};

// The instance types a `type` keyword admits (all of them when it is absent).
unsigned TypeSet(const JsonValue* type);
// `types` with integer added where number is (every integer is a number).
inline unsigned WithIntegers(unsigned types) {
  return (types & kNumber) != 0 ? types | kInteger : types;
}

// The names a `required` keyword lists. A set, not a scan: a hostile schema may list 100000.
std::set<std::string> RequiredNames(const JsonValue* required);

// The values `enum`/`const` admit, canonical; `universal` when neither is present.
struct ValueSet {
  bool universal = true;
  std::vector<std::string> values;  // sorted, unique
};
ValueSet ValuesOf(const Node& node);

std::string Quote(std::string_view name);               // 'name'
std::string DataText(const std::string& data_pointer);  // the pointer, or "the payload"

}  // namespace evident::compat
