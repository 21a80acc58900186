// Parsing helpers shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txl {

// "64,128,256" -> {64, 128, 256}; anything but positive integers is an InputError naming
// the option and the bad item.
std::vector<int64_t> parse_lengths(const std::string& text, const std::string& option);

}  // namespace txl
