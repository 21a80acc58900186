// The table of environment variables and the start-up check over it: a switch takes 0 or 1
// and nothing else, a value is left to its reader, and a TXL_ name the table lacks is
// reported. The readers of every entry, the sources and the README are checked against it in
// env_declared_test.cpp.
#include "txl/util/env_variables.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "txl/util/error.h"

namespace txl {
namespace {

// check_env_variables over these NAME=value entries only.
std::vector<std::string> check(std::vector<std::string> entries) {
  std::vector<char*> environment;
  for (auto& e : entries) environment.push_back(e.data());
  environment.push_back(nullptr);
  return check_env_variables(environment.data());
}

std::string refusal(const std::string& entry) {
  try {
    check({entry});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(EnvVariables, EveryNameIsListedOnceATxlNameUnlessAnotherProgramsOne) {
  std::set<std::string> seen;
  for (const auto& v : env_variables()) {
    const bool txl_name = std::string(v.name).rfind("TXL_", 0) == 0;
    EXPECT_EQ(txl_name, v.origin != EnvOrigin::kForeign) << v.name;
    EXPECT_TRUE(seen.insert(v.name).second) << v.name << " is listed twice";
    EXPECT_GT(std::string(v.does).size(), 0u) << v.name;
    if (v.kind == EnvKind::kInteger) {
      EXPECT_LE(v.lo, v.hi) << v.name;
    } else {
      EXPECT_EQ(v.lo, 0) << v.name << " has a range but is no integer";
      EXPECT_EQ(v.hi, 0) << v.name << " has a range but is no integer";
    }
  }
}

TEST(EnvVariables, ASwitchTakesZeroOrOne) {
  EXPECT_TRUE(
      check({"TXL_FUSED_ATTENTION=0", "TXL_ONEDNN=1", "TXL_SYSTEM_MALLOC=0", "TXL_NO_BLAS_FIX=1"})
          .empty());
  for (const char* value : {"off", "", "00", " 0", "0 ", "2", "yes", "true"}) {
    const auto message = refusal(std::string("TXL_FUSED_ATTENTION=") + value);
    SCOPED_TRACE(std::string("value \"") + value + "\"");
    EXPECT_NE(message.find("TXL_FUSED_ATTENTION=\"" + std::string(value) + "\""), std::string::npos)
        << message;
    EXPECT_NE(message.find("expected 0 or 1"), std::string::npos) << message;
  }
  // Every switch of the table is checked, not only the first.
  for (const auto& v : env_variables()) {
    if (v.kind != EnvKind::kSwitch) continue;
    EXPECT_NE(refusal(std::string(v.name) + "=off").find(v.name), std::string::npos) << v.name;
  }
}

TEST(EnvVariables, ValuesAreLeftToTheirReaders) {
  EXPECT_TRUE(check({"TXL_CACHE_DIR=off", "TXL_CPU_FLAGS=avx avx2 fma", "TXL_FUSED_ROW_BLOCK=abc",
                     "TXL_INJECT_STOP_AT_STEP=3"})
                  .empty());
}

TEST(EnvVariables, NamesTheTableLacksAreReturnedInOrder) {
  EXPECT_EQ(check({"TXL_FUSED_ATENTION=0", "PATH=/bin", "TXL=1", "TXL_ONEDNN=0",
                   "TXL_X=", "NOT_TXL_Y=1"}),
            (std::vector<std::string>{"TXL_FUSED_ATENTION", "TXL_X"}));
}

}  // namespace
}  // namespace txl
