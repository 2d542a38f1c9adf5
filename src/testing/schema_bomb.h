// testing/schema_bomb.h — a schema-shaped bomb for the tests that hold validation to its budget:
// `depth` $defs, each an allOf of two $refs to the next, under unevaluatedProperties: 2^depth
// paths that memoization cannot share (each path's annotations count). Any instance of type
// object sends validation down all of them.
#pragma once

#include <string>

namespace evident::test_support {

inline std::string AllOfChainBomb(int depth) {
  std::string schema = R"({"$ref":"#/$defs/d0","unevaluatedProperties":false,"$defs":{)";
  for (int i = 0; i < depth; ++i) {
    const std::string next = "\"#/$defs/d" + std::to_string(i + 1) + "\"";
    schema += "\"d" + std::to_string(i) + R"(":{"allOf":[{"$ref":)" + next + R"(},{"$ref":)" +
              next + "}]},";
  }
  schema += "\"d" + std::to_string(depth) + R"(":{"type":"object"}}})";
  return schema;
}

}  // namespace evident::test_support
