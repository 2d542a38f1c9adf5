// compat/keywords.cc — see keywords.h.
#include "compat/keywords.h"

#include <algorithm>

namespace evident::compat {

namespace {

unsigned TypeBitOf(std::string_view name) {
  if (name == "null") return kNull;
  if (name == "boolean") return kBoolean;
  if (name == "object") return kObject;
  if (name == "array") return kArray;
  if (name == "number") return kNumber;
  if (name == "integer") return kInteger;
  if (name == "string") return kString;
  return 0;
}

}  // namespace

unsigned TypeSet(const JsonValue* type) {
  if (type == nullptr) return kAnyType;
  if (type->IsString()) return TypeBitOf(type->string);
  unsigned set = 0;
  if (type->IsArray()) {
    for (const JsonValue& item : type->array) {
      if (item.IsString()) set |= TypeBitOf(item.string);
    }
  }
  return set;
}

std::string Quote(std::string_view name) {
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) about "'" + std::string + "'".
  std::string out;
  out.reserve(name.size() + 2);
  out += '\'';
  out += name;
  out += '\'';
  return out;
}

std::string DataText(const std::string& data_pointer) {
  return data_pointer.empty() ? std::string("the payload") : data_pointer;
}

std::set<std::string> RequiredNames(const JsonValue* required) {
  std::set<std::string> names;
  if (required == nullptr || !required->IsArray()) return names;
  for (const JsonValue& v : required->array) {
    if (v.IsString()) names.insert(v.string);
  }
  return names;
}

ValueSet ValuesOf(const Node& node) {
  ValueSet set;
  if (const JsonValue* c = node.Keyword("const")) {
    set.universal = false;
    set.values.push_back(Canonical(*c));
  } else if (const JsonValue* e = node.Keyword("enum"); e != nullptr && e->IsArray()) {
    set.universal = false;
    for (const JsonValue& v : e->array) set.values.push_back(Canonical(v));
  }
  std::sort(set.values.begin(), set.values.end());
  set.values.erase(std::unique(set.values.begin(), set.values.end()), set.values.end());
  return set;
}

}  // namespace evident::compat
