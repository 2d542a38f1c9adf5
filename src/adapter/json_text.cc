#include "adapter/json_text.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace evident::adapter {

std::string ShortestNumberText(double value) {
  assert(std::isfinite(value));
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  assert(error == std::errc());
  return std::string(buffer, end);
}

void WriteJson(const compat::JsonValue& value, json::Writer& writer) {
  using Kind = compat::JsonValue::Kind;
  switch (value.kind) {
    case Kind::kNull:
      writer.Null();
      return;
    case Kind::kBool:
      writer.Bool(value.boolean);
      return;
    case Kind::kNumber:
      if (value.is_integer) {
        writer.Int(value.integer);
      } else if (value.is_unsigned) {
        writer.Uint(value.unsigned_integer);
      } else {
        writer.Raw(ShortestNumberText(value.number));
      }
      return;
    case Kind::kString:
      writer.String(value.string);
      return;
    case Kind::kArray:
      writer.BeginArray();
      for (const compat::JsonValue& item : value.array) WriteJson(item, writer);
      writer.EndArray();
      return;
    case Kind::kObject:
      writer.BeginObject();
      for (const compat::JsonMember& member : value.object) {
        writer.Key(member.name);
        WriteJson(member.value, writer);
      }
      writer.EndObject();
      return;
  }
}

std::string JsonText(const compat::JsonValue& value) {
  std::string out;
  json::Writer writer(out);
  WriteJson(value, writer);
  return out;
}

}  // namespace evident::adapter
