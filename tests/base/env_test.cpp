// The readers of environment variables. Switches: only the exact value counts, so
// TXL_FUSED_ATTENTION=00, =off or an empty value leaves the default, and an unset variable is
// never dereferenced. Values: read as their entry in the table says, and refused by name,
// value and what they take.
#include "txl/util/env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base_test_util.h"
#include "txl/util/env_variables.h"

namespace txl {
namespace {

using testing::input_error;

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

// Sets (or, with nullptr, unsets) a variable for a scope, then restores it.
class SetEnv {
 public:
  SetEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~SetEnv() {
    if (saved_) {
      ::setenv(name_.c_str(), saved_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  SetEnv(const SetEnv&) = delete;
  SetEnv& operator=(const SetEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

TEST(EnvInt, TakesTheRangeOfItsEntryAndRefusesTheRestByName) {
  const char* name = "TXL_DIST_TIMEOUT_S";  // 1 to 86400
  {
    const SetEnv unset(name, nullptr);
    EXPECT_EQ(env_int(name), std::nullopt);
  }
  for (const auto& [text, value] :
       std::vector<std::pair<const char*, int64_t>>{{"1", 1}, {"600", 600}, {"86400", 86400}}) {
    const SetEnv set(name, text);
    EXPECT_EQ(env_int(name), value) << text;
  }
  {
    const SetEnv empty(name, "");  // the same as unset
    EXPECT_EQ(env_int(name), std::nullopt);
    EXPECT_FALSE(env_set(name));
  }
  for (const char* bad :
       {"0", "86401", "-1", "abc", "5s", " 5", "5 ", "1e3", "+5", "99999999999999999999"}) {
    const SetEnv set(name, bad);
    EXPECT_EQ(input_error([&] { env_int(name); }),
              std::string(name) + "=\"" + bad +
                  "\" is not valid; expected an integer from 1 to 86400 (" +
                  env_variable(name).does + ")");
  }
}

TEST(EnvInt, ANarrowerRangeIsCheckedAndMustLieInTheDeclaredOne) {
  const SetEnv rank("RANK", "2");  // declared 0 to 4095
  EXPECT_EQ(env_int("RANK", 0, 3), 2);
  EXPECT_TRUE(testing::contains(input_error([] { env_int("RANK", 0, 1); }),
                                "RANK=\"2\" is not valid; expected an integer from 0 to 1"));
  EXPECT_THROW(env_int("RANK", 0, 4096), std::logic_error);
  EXPECT_THROW(env_int("RANK", -1, 1), std::logic_error);
}

TEST(EnvReaders, AnEmptyValueIsUnsetUnlessItsEntrySaysOtherwise) {
  {
    const SetEnv empty("TXL_CACHE_DIR", "");
    EXPECT_EQ(env_text("TXL_CACHE_DIR"), std::nullopt);
  }
  {
    const SetEnv empty("TXL_CPU_FLAGS", "");  // a CPU with none of the flags
    EXPECT_EQ(env_text("TXL_CPU_FLAGS"), std::string());
  }
  {
    const SetEnv empty("OMP_WAIT_POLICY", "");  // the user chose
    EXPECT_TRUE(env_set("OMP_WAIT_POLICY"));
  }
  {
    const SetEnv empty("TXL_FUSED_ROW_BLOCK", "");  // refused, not the default
    EXPECT_TRUE(testing::contains(input_error([] { env_int("TXL_FUSED_ROW_BLOCK"); }),
                                  "TXL_FUSED_ROW_BLOCK=\"\" is not valid"));
  }
  const SetEnv text("TXL_CACHE_DIR", " /a b ");  // text as it is
  EXPECT_EQ(env_text("TXL_CACHE_DIR"), " /a b ");
}

TEST(EnvNumber, TakesANumberAboveZero) {
  const char* name = "TXL_MEMORY_LIMIT_MB";
  {
    const SetEnv set(name, "0.5");
    EXPECT_EQ(env_number(name), 0.5);
  }
  // Issue 54: " 500", "0x10", "inf" and "1e400" were taken (strtod), where env_int refuses " 32".
  for (const char* bad :
       {"0", "-1", "abc", "1x", "nan", " 500", "500 ", "0x10", "inf", "1e400", "+5"}) {
    const SetEnv set(name, bad);
    EXPECT_TRUE(testing::contains(
        input_error([&] { env_number(name); }),
        std::string(name) + "=\"" + bad + "\" is not valid; expected a number above 0"))
        << bad;
  }
}

TEST(EnvSteps, TakesStepNumbersSeparatedByCommas) {
  const char* name = "TXL_INJECT_STOP_AT_STEP";
  {
    const SetEnv unset(name, nullptr);
    EXPECT_TRUE(env_steps(name).empty());
  }
  {
    const SetEnv set(name, "3,7");
    EXPECT_EQ(env_steps(name), (std::vector<int64_t>{3, 7}));
  }
  for (const char* bad : {"0", "a", "3,", ",3", "3;7"}) {
    const SetEnv set(name, bad);
    EXPECT_TRUE(testing::contains(input_error([&] { env_steps(name); }),
                                  std::string(name) + "=\"" + bad + "\" is not valid"))
        << bad;
  }
}

}  // namespace
}  // namespace txl
