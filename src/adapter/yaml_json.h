// adapter/yaml_json.h — a YAML scalar as JSON text, by YAML 1.2's core schema: the one typing
// rule of every YAML value evident turns into JSON (an adapter's constants and map values, a
// projection step's default constants).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "evident/status.h"

namespace evident::adapter {

// A quoted scalar (or one tagged !!str) is a string; a plain one is null (~, null, empty), a
// boolean (true, false), a decimal integer (int64), a decimal number (finite, written as its
// shortest text), or else a string: `010` is the integer 10, `yes` and `0x10` are strings.
// InvalidArgument "origin:line: what" for a sequence, a mapping, an unsupported tag, an integer
// out of range, .inf or .nan.
Result<std::string> ScalarToJson(const YAML::Node& node, std::string_view origin);

}  // namespace evident::adapter
