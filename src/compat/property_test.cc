// Property tests of DiffSchemas over random schemas: a schema never differs from itself, and
// the diff is symmetric: B reads A's data (backward of A -> B) exactly when, seen from the other
// side, B's data is readable by ... the old schema (forward of B -> A). Random schemas use $ref
// (also cyclic), composition, closed objects, bounds, enums and meaning annotations.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "evident/compat.h"

namespace evident {
namespace {

// Draws from `main`; with probability `noise_per_mille`/1000 a draw comes from `noise` instead,
// so two generators with the same seed and different noise make similar schemas.
class Generator {
 public:
  Generator(uint32_t seed, uint32_t noise_seed, int noise_per_mille)
      : main_(seed), noise_(noise_seed), noise_per_mille_(noise_per_mille) {}

  std::string Schema(bool draft7) {
    std::string out = draft7 ? R"({"$schema":"http://json-schema.org/draft-07/schema#")"
                             : R"({"$schema":"https://json-schema.org/draft/2020-12/schema")";
    const char* defs = draft7 ? "definitions" : "$defs";
    defs_ = defs;
    out += std::string(",\"") + defs + "\":{";
    for (int i = 0; i < 3; ++i) {
      if (i > 0) out += ",";
      // Definitions are never bare references, so no cycle of references without a schema.
      out += "\"d" + std::to_string(i) + "\":{" + Body(2) + "}";
    }
    out += "}";
    const std::string body = Body(3);
    if (!body.empty()) out += "," + body;
    return out + "}";
  }

 private:
  int Pick(int n) {
    int value = static_cast<int>(main_() % static_cast<uint32_t>(n));
    if (static_cast<int>(noise_() % 1000) < noise_per_mille_) {
      value = static_cast<int>(noise_() % static_cast<uint32_t>(n));
    }
    return value;
  }

  std::string Subschema(int depth) {
    const int kind = Pick(10);
    if (kind == 0) return Pick(4) == 0 ? "false" : "true";
    if (kind == 1)
      return std::string(R"({"$ref":"#/)") + defs_ + "/d" + std::to_string(Pick(3)) + "\"}";
    std::string out = "{";
    out += Body(depth);
    out += "}";
    return out;
  }

  std::string Body(int depth) {
    static const char* kTypes[] = {"\"string\"",
                                   "\"integer\"",
                                   "\"number\"",
                                   "\"object\"",
                                   "\"null\"",
                                   "[\"string\",\"null\"]",
                                   "[\"integer\",\"string\"]"};
    static const char* kNames[] = {"a", "b", "c", "d"};
    std::vector<std::string> members;
    if (Pick(3) != 0) members.push_back(std::string("\"type\":") + kTypes[Pick(7)]);
    if (depth > 0 && Pick(2) == 0) {
      std::string properties = "\"properties\":{";
      bool first = true;
      for (const char* name : kNames) {
        if (Pick(2) != 0) continue;
        properties += first ? "\"" : ",\"";
        properties += name;
        properties += "\":" + Subschema(depth - 1);
        first = false;
      }
      members.push_back(properties + "}");
      std::string required = "\"required\":[";
      first = true;
      for (const char* name : kNames) {
        if (Pick(3) != 0) continue;
        required += first ? "\"" : ",\"";
        required += name;
        required += "\"";
        first = false;
      }
      members.push_back(required + "]");
    }
    if (Pick(4) == 0)
      members.push_back(Pick(2) == 0 ? "\"additionalProperties\":false"
                                     : "\"additionalProperties\":" + Subschema(0));
    if (Pick(4) == 0) {
      static const char* kEnums[] = {"[1,2]", "[1,2,3]", "[\"x\"]", "[\"x\",\"y\"]", "[1,\"x\"]"};
      members.push_back(std::string("\"enum\":") + kEnums[Pick(5)]);
    }
    if (Pick(8) == 0) members.push_back("\"const\":" + std::to_string(Pick(3)));
    static const char* kBounds[] = {"maxLength", "minLength", "maximum",    "minimum",
                                    "maxItems",  "minItems",  "multipleOf", "exclusiveMaximum"};
    int bound_taken = -1;  // a keyword at most once: a repeated member name is refused
    for (int i = 0; i < 2; ++i) {
      if (Pick(3) == 0) {
        const int bound = Pick(8);
        const std::string value = std::to_string(1 + Pick(4));
        if (bound == bound_taken) continue;
        bound_taken = bound;
        members.push_back(std::string("\"") + kBounds[bound] + "\":" + value);
      }
    }
    if (Pick(6) == 0)
      members.push_back(std::string("\"pattern\":\"") + (Pick(2) ? "^a" : "^b") + "\"");
    if (Pick(6) == 0)
      members.push_back(std::string("\"format\":\"") + (Pick(2) ? "date" : "uuid") + "\"");
    if (Pick(5) == 0)
      members.push_back(std::string("\"x-unit\":\"") + (Pick(2) ? "cents" : "euros") + "\"");
    if (depth > 0 && Pick(4) == 0) members.push_back("\"items\":" + Subschema(depth - 1));
    if (depth > 0 && Pick(5) == 0) {
      static const char* kCompositions[] = {"anyOf", "oneOf", "allOf"};
      std::string list = std::string("\"") + kCompositions[Pick(3)] + "\":[";
      const int count = 1 + Pick(3);
      for (int i = 0; i < count; ++i) {
        if (i > 0) list += ",";
        list += Subschema(depth - 1);
      }
      members.push_back(list + "]");
    }
    if (depth > 0 && Pick(10) == 0) members.push_back("\"not\":" + Subschema(depth - 1));
    std::string body;
    for (size_t i = 0; i < members.size(); ++i) body += (i > 0 ? "," : "") + members[i];
    return body;
  }

  std::mt19937 main_;
  std::mt19937 noise_;
  int noise_per_mille_;
  const char* defs_ = "$defs";
};

class RandomSchemas : public ::testing::TestWithParam<bool> {};

TEST_P(RandomSchemas, ReflexiveAndSymmetric) {
  const bool draft7 = GetParam();
  int compared = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    const std::string a = Generator(seed, 0, 0).Schema(draft7);
    const std::string b = Generator(seed, seed * 7919, seed % 3 == 0 ? 1000 : 60).Schema(draft7);
    for (const Strictness strictness : {Strictness::kLenient, Strictness::kStrict}) {
      DiffOptions options;
      options.strictness = strictness;
      auto same = DiffSchemas(a, a, options);
      ASSERT_TRUE(same.ok()) << same.status().ToString() << "\n" << a;
      EXPECT_TRUE(same->changes.empty()) << a << "\n" << same->changes[0].message;
      auto forth = DiffSchemas(a, b, options);
      auto back = DiffSchemas(b, a, options);
      ASSERT_EQ(forth.ok(), back.ok()) << (forth.ok() ? back : forth).status().ToString() << "\n"
                                       << a << "\n"
                                       << b;
      if (!forth.ok()) {
        EXPECT_EQ(forth.status().code(), Code::kLimitExceeded);
        continue;
      }
      ++compared;
      EXPECT_EQ(forth->CompatibleUnder(CompatMode::kBackward),
                back->CompatibleUnder(CompatMode::kForward))
          << "seed " << seed << "\nA: " << a << "\nB: " << b;
      EXPECT_EQ(forth->CompatibleUnder(CompatMode::kForward),
                back->CompatibleUnder(CompatMode::kBackward))
          << "seed " << seed << "\nA: " << a << "\nB: " << b;
      EXPECT_EQ(forth->changes.empty(), back->changes.empty()) << a << "\n" << b;
    }
  }
  EXPECT_GT(compared, 700);
}

INSTANTIATE_TEST_SUITE_P(Dialects, RandomSchemas, ::testing::Values(true, false),
                         [](const auto& param_info) {
                           return param_info.param ? "draft7" : "draft2020";
                         });

}  // namespace
}  // namespace evident
