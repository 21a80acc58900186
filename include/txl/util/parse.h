// Small text parsers shared by the command line and the testing hooks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txl {

// Comma-separated positive integers ("64,128,256") appended to `out`. Returns the first item
// that is not a positive integer (an empty item counts), or std::nullopt when every one is.
std::optional<std::string> parse_positive_integers(const std::string& text,
                                                   std::vector<int64_t>& out);

}  // namespace txl
