// Error types and their exit codes.
//
// InputError: the user's input is wrong (usage, configuration, corpus, run directory).
//             The message names the file, key or value and what was expected. Exit code 2.
// Anything else derived from std::exception is a runtime failure. Exit code 1.
#pragma once

#include <stdexcept>
#include <string>

namespace txl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeFailure = 1;
inline constexpr int kExitInputError = 2;

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace txl
