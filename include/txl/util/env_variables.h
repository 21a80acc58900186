// Every TXL_* environment variable txl or its tests read, in one table: what it takes and
// what it does. txl checks the environment against it at start-up (check_env_variables):
// a switch set to anything but 0 or 1 is refused, where it used to leave the default
// silently (TXL_FUSED_ATTENTION=off kept the fused pass, and an A/B comparison compared a
// build with itself); a TXL_ name the table lacks (a typo) gets a warning.
#pragma once

#include <string>
#include <vector>

namespace txl {

enum class EnvKind {
  kSwitch,    // "0" or "1"; read with env_is (util/env.h)
  kValue,     // checked where it is read (a number, a path, flags)
  kInternal,  // set by txl for its own child processes, or by the tests
};

struct EnvVariable {
  const char* name;
  EnvKind kind;
  const char* does;  // for a switch: what its non-default value does
};

const std::vector<EnvVariable>& env_variables();

// Checks the switches that are set (InputError naming the variable, its value and the two
// accepted values) and returns the TXL_ names in `environment` (NAME=value entries, null
// terminated; the process's own by default) that the table lacks, in their order there.
std::vector<std::string> check_env_variables(char* const* environment = nullptr);

}  // namespace txl
