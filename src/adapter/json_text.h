// adapter/json_text.h — compact JSON text of a compat::JsonValue tree, and number text.
//
// Shared by ApplyAdapter (which writes the adapted payload) and GenerateInstances. Member order is
// kept; integers are written as integers and other numbers as the shortest text that reads back
// as the same double (std::to_chars), so an untouched number keeps its value.
#pragma once

#include <string>

#include "compat/json_tree.h"
#include "json/writer.h"

namespace evident::adapter {

// The shortest decimal text that reads back as `value` ("0.1", "12.34", "1e+300"). `value` must
// be finite (JSON has no infinities).
std::string ShortestNumberText(double value);

// Writes `value` and everything below it to `writer`.
void WriteJson(const compat::JsonValue& value, json::Writer& writer);

// `value` as compact JSON text.
std::string JsonText(const compat::JsonValue& value);

}  // namespace evident::adapter
