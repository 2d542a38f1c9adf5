#include "evident/schema.h"

#include <gtest/gtest.h>

namespace evident::schema {
namespace {

TEST(Schema, Placeholder) {}

}  // namespace
}  // namespace evident::schema
