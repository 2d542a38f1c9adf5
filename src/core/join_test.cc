#include "core/join.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace evident {
namespace {

TEST(Join, SeparatesEveryItemEmptyOnesToo) {
  EXPECT_EQ(Join(std::vector<std::string>{}), "");
  EXPECT_EQ(Join(std::vector<std::string>{"a"}), "a");
  EXPECT_EQ(Join(std::vector<std::string>{"", "b", ""}), ", b, ");
  EXPECT_EQ(Join(std::set<std::string>{"b", "a"}, " | "), "a | b");
  const std::map<int, std::string> versions = {{2, "x"}, {1, "y"}};
  EXPECT_EQ(JoinEach(versions, [](const auto& e) { return std::to_string(e.first); }), "1, 2");
}

}  // namespace
}  // namespace evident
