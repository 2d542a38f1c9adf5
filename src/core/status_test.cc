#include "evident/status.h"

#include <gtest/gtest.h>

namespace evident {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  EVIDENT_ASSIGN_OR_RETURN(int half, Half(x));
  EVIDENT_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  EVIDENT_RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = Status::NotFound("no such consumer");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.ToString(), "not-found: no such consumer");
  EXPECT_EQ(s.Annotate("loading").message(), "loading: no such consumer");
}

TEST(Result, PropagatesThroughMacros) {
  EXPECT_EQ(Quarter(8).value(), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(5).ok());
}

}  // namespace
}  // namespace evident
