// Environment switches: only the exact value counts, so TXL_FUSED_ATTENTION=00, =off or an
// empty value leaves the default, and an unset variable is never dereferenced.
#include "txl/util/env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace txl {
namespace {

TEST(EnvIs, OnlyTheExactValueSwitches) {
  const char* name = "TXL_ENV_TEST_SWITCH";
  ::unsetenv(name);
  EXPECT_FALSE(env_is(name, "0"));
  for (const char* other : {"", "00", "0 ", "off", "1"}) {
    ::setenv(name, other, 1);
    EXPECT_FALSE(env_is(name, "0")) << "\"" << other << "\"";
  }
  ::setenv(name, "0", 1);
  EXPECT_TRUE(env_is(name, "0"));
  EXPECT_FALSE(env_is(name, "1"));
  ::unsetenv(name);
}

}  // namespace
}  // namespace txl
