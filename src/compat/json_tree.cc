#include "compat/json_tree.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "json/pointer.h"
#include "json/writer.h"

namespace evident::compat {
namespace {

Status Convert(simdjson::dom::element element, JsonValue& out, int64_t depth,
               int64_t nesting_depth_max) {
  if (depth > nesting_depth_max) {
    return Status::LimitExceeded("JSON nesting deeper than nesting_depth_max=" +
                                 std::to_string(nesting_depth_max) + " levels");
  }
  switch (element.type()) {
    case simdjson::dom::element_type::OBJECT: {
      out.kind = JsonValue::Kind::kObject;
      simdjson::dom::object object;
      if (element.get(object) != simdjson::SUCCESS) return Status::Internal("not an object");
      for (const auto field : object) {
        out.object.emplace_back();
        out.object.back().name = std::string(field.key);
        EVIDENT_RETURN_IF_ERROR(
            Convert(field.value, out.object.back().value, depth + 1, nesting_depth_max));
      }
      // simdjson keeps a repeated member name; a schema that says two things under one name is
      // ambiguous (I-JSON forbids it), and look-ups by name would see only the first.
      std::vector<std::string_view> names;
      names.reserve(out.object.size());
      for (const JsonMember& member : out.object) names.push_back(member.name);
      std::sort(names.begin(), names.end());
      if (const auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end()) {
        return Status::InvalidArgument("member name '" + std::string(*twice) +
                                       "' appears twice in one object");
      }
      return Status::Ok();
    }
    case simdjson::dom::element_type::ARRAY: {
      out.kind = JsonValue::Kind::kArray;
      simdjson::dom::array array;
      if (element.get(array) != simdjson::SUCCESS) return Status::Internal("not an array");
      for (const auto item : array) {
        out.array.emplace_back();
        EVIDENT_RETURN_IF_ERROR(Convert(item, out.array.back(), depth + 1, nesting_depth_max));
      }
      return Status::Ok();
    }
    case simdjson::dom::element_type::STRING:
      out.kind = JsonValue::Kind::kString;
      out.string = std::string(element.get_string().value_unsafe());
      return Status::Ok();
    case simdjson::dom::element_type::INT64:
      out.kind = JsonValue::Kind::kNumber;
      out.is_integer = true;
      out.integer = element.get_int64().value_unsafe();
      out.number = static_cast<double>(out.integer);
      return Status::Ok();
    case simdjson::dom::element_type::UINT64:
      out.kind = JsonValue::Kind::kNumber;
      out.is_unsigned = true;
      out.unsigned_integer = element.get_uint64().value_unsafe();
      out.number = static_cast<double>(out.unsigned_integer);
      return Status::Ok();
    case simdjson::dom::element_type::DOUBLE:
      out.kind = JsonValue::Kind::kNumber;
      out.number = element.get_double().value_unsafe();
      return Status::Ok();
    case simdjson::dom::element_type::BOOL:
      out.kind = JsonValue::Kind::kBool;
      out.boolean = element.get_bool().value_unsafe();
      return Status::Ok();
    case simdjson::dom::element_type::NULL_VALUE:
      out.kind = JsonValue::Kind::kNull;
      return Status::Ok();
  }
  return Status::Internal("unknown simdjson element type");
}

void AppendCanonical(const JsonValue& value, std::string& out) {
  switch (value.kind) {
    case JsonValue::Kind::kNull:
      out += "null";
      return;
    case JsonValue::Kind::kBool:
      out += value.boolean ? "true" : "false";
      return;
    case JsonValue::Kind::kNumber: {
      if (value.is_integer) {
        out += std::to_string(value.integer);
      } else if (std::isfinite(value.number) && value.number == std::floor(value.number) &&
                 std::fabs(value.number) < 9.0e15) {
        out += std::to_string(static_cast<int64_t>(value.number));
      } else {
        char buffer[40];
        std::snprintf(buffer, sizeof(buffer), "%.17g", value.number);
        out += buffer;
      }
      return;
    }
    case JsonValue::Kind::kString:
      json::AppendQuoted(out, value.string);
      return;
    case JsonValue::Kind::kArray:
      out += '[';
      for (size_t i = 0; i < value.array.size(); ++i) {
        if (i > 0) out += ',';
        AppendCanonical(value.array[i], out);
      }
      out += ']';
      return;
    case JsonValue::Kind::kObject: {
      std::vector<const JsonMember*> members;
      members.reserve(value.object.size());
      for (const auto& member : value.object) members.push_back(&member);
      std::sort(members.begin(), members.end(),
                [](const auto* a, const auto* b) { return a->name < b->name; });
      out += '{';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out += ',';
        json::AppendQuoted(out, members[i]->name);
        out += ':';
        AppendCanonical(members[i]->value, out);
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

const JsonValue* JsonValue::Get(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& [name, value] : object) {
    if (name == key) return &value;
  }
  return nullptr;
}

Result<std::unique_ptr<JsonValue>> ParseJsonTree(std::string_view text, int64_t nesting_depth_max) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(text);
  const simdjson::error_code error = parser.parse(padded).get(root);
  if (error != simdjson::SUCCESS) {
    return Status::InvalidArgument(std::string("not valid JSON: ") +
                                   simdjson::error_message(error));
  }
  auto tree = std::make_unique<JsonValue>();
  EVIDENT_RETURN_IF_ERROR(Convert(root, *tree, 0, nesting_depth_max));
  return tree;
}

std::string Canonical(const JsonValue& value) {
  std::string out;
  AppendCanonical(value, out);
  return out;
}

std::string AppendToken(std::string_view pointer, std::string_view token) {
  std::string out(pointer);
  out += '/';
  json::AppendPointerToken(out, token);
  return out;
}

const JsonValue* Resolve(const JsonValue& root, std::string_view pointer) {
  std::vector<std::string> tokens;
  if (!json::SplitPointer(pointer, tokens)) return nullptr;  // not a JSON Pointer
  const JsonValue* at = &root;
  for (const std::string& token : tokens) {
    if (at->IsObject()) {
      at = at->Get(token);
    } else if (at->IsArray()) {
      if (token.empty() || token.size() > 9 ||
          token.find_first_not_of("0123456789") != std::string::npos) {
        return nullptr;
      }
      const size_t index = std::stoul(token);
      at = index < at->array.size() ? &at->array[index] : nullptr;
    } else {
      return nullptr;
    }
    if (at == nullptr) return nullptr;
  }
  return at;
}

}  // namespace evident::compat
