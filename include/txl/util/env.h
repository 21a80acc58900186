// Switches read from the environment: TXL_FUSED_ATTENTION=0, TXL_SYSTEM_MALLOC=1 and the like.
#pragma once

#include <cstdlib>
#include <cstring>

namespace txl {

// Whether the environment variable `name` is set to exactly `value` ("0" switches a fast
// path off, "1" a fix off; unset leaves the default). Every switch is listed in
// util/env_variables.h, and txl's start-up refuses any other value of one.
inline bool env_is(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::strcmp(set, value) == 0;
}

}  // namespace txl
