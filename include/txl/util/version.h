// The txl version (CMake's project version), recorded in the outputs that must say which
// txl produced them (study results and reports).
#pragma once

#include <string>

namespace txl {

std::string txl_version();

}  // namespace txl
