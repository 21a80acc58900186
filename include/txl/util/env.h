// Typed readers of environment variables: the only place txl looks a variable up. Each takes a name
// declared in util/env_variables.h and reads it as its entry says; a name the table lacks, or
// one read as another kind, is a programming error (std::logic_error). A value the entry does
// not accept is the user's (InputError naming the variable, its value and what it takes).
// Unless the entry says an empty value is set (empty_is_set), "NAME=" reads as unset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txl {

// Whether the switch `name` is set to exactly `value` ("0" switches a fast path off, "1" a
// fix off; unset, or any other value, leaves the default: txl's start-up refuses any other
// value of a switch, check_env_variables).
bool env_is(const char* name, const char* value);

// Whether `name` (of any kind) is set.
bool env_set(const char* name);

// An integer in the entry's range; std::nullopt when unset.
std::optional<int64_t> env_int(const char* name);
// The same within [lo, hi], a part of the entry's range that depends on another value (RANK
// below WORLD_SIZE).
std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi);

// A number above 0; std::nullopt when unset.
std::optional<double> env_number(const char* name);

// Step numbers >= 1 separated by commas, in their order there; none when unset.
std::vector<int64_t> env_steps(const char* name);

// Text, a path or a flag list, as it is; std::nullopt when unset.
std::optional<std::string> env_text(const char* name);

}  // namespace txl
