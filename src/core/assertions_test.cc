// Whether assert() runs in this build. scripts/test.sh configures with EVIDENT_ASSERTIONS=ON,
// which also defines EVIDENT_ASSERTIONS_REQUIRED for this test: the CI build must then prove
// that an assertion fires, and fails if NDEBUG came back (for instance through a flag order).
#include <gtest/gtest.h>

#include <cassert>

namespace evident {
namespace {

TEST(AssertionsDeathTest, FireInThisBuild) {
#ifdef NDEBUG
#ifdef EVIDENT_ASSERTIONS_REQUIRED
  FAIL() << "EVIDENT_ASSERTIONS is on, yet NDEBUG is defined: assert() is compiled out";
#else
  GTEST_SKIP() << "assert() is compiled out in this build (configure with "
                  "-DEVIDENT_ASSERTIONS=ON, as scripts/test.sh does)";
#endif
#else
  EXPECT_DEATH(assert(false && "an invariant"), "an invariant");
#endif
}

}  // namespace
}  // namespace evident
