// Every environment variable txl reads, in one table: its name, what it takes (the kind and,
// for an integer, its range), who sets it and what it does. The readers of util/env.h read a
// variable only through its entry, and txl checks the environment against the table at
// start-up (check_env_variables): a switch set to anything but 0 or 1 is refused, where it
// used to leave the default silently (TXL_FUSED_ATTENTION=off kept the fused pass, and an A/B
// comparison compared a build with itself); a TXL_ name the table lacks (a typo) gets a
// warning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txl {

// What a variable takes, and the reader of util/env.h that reads it.
enum class EnvKind {
  kSwitch,   // "0" or "1": env_is
  kInteger,  // an integer from lo to hi: env_int
  kNumber,   // a number above 0: env_number
  kSteps,    // step numbers >= 1 separated by commas: env_steps
  kFlags,    // names separated by spaces: env_text
  kText,     // a path, a folder, an address or a word: env_text
};

// Who sets a variable.
enum class EnvOrigin {
  kUser,     // a user, to change what txl does (the README's table lists these)
  kTxl,      // txl itself, for the processes it starts
  kTests,    // the tests (fault injection, fuzzing)
  kForeign,  // another program's convention that txl follows (torchrun, OpenBLAS, OpenMP, POSIX)
};

struct EnvVariable {
  const char* name;
  EnvKind kind;
  EnvOrigin origin;
  const char* does;  // a switch: what its non-default value does; a value: what it stands for
  int64_t lo = 0;    // kInteger: the accepted range
  int64_t hi = 0;
  bool empty_is_set = false;  // "NAME=" is a value (read as such) rather than the same as unset
};

const std::vector<EnvVariable>& env_variables();

// The entry of `name`. A name the table lacks is a programming error (std::logic_error): a
// reader must never look up a variable the table does not declare.
const EnvVariable& env_variable(const std::string& name);

// Checks the switches that are set (InputError naming the variable, its value and the two
// accepted values) and returns the TXL_ names in `environment` (NAME=value entries, null
// terminated; the process's own by default) that the table lacks, in their order there.
std::vector<std::string> check_env_variables(char* const* environment = nullptr);

}  // namespace txl
