// Parsing helpers shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txl {

// "64,128,256" -> {64, 128, 256}; anything but positive integers is an InputError naming
// the option and the bad item.
std::vector<int64_t> parse_lengths(const std::string& text, const std::string& option);

// An output path must name a file in an existing directory (empty: no output); an
// InputError naming the option otherwise.
void check_output_path(const std::string& path, const std::string& option);

// A --threads value: 0 (all cores) up to kMaxThreads, the range train.threads takes; a
// negative count means nothing, so it is an InputError naming the option, not a default.
void check_threads(int64_t threads, const std::string& option);

}  // namespace txl
