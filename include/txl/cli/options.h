// Parsing helpers shared by the subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace txl {

// "64,128,256" -> {64, 128, 256}; anything but positive integers is an InputError naming
// the option and the bad item.
std::vector<int64_t> parse_lengths(const std::string& text, const std::string& option);

// A value given as '' (--lengths '', --split '', --run-dir '') would read as the option left
// out, i.e. its default; a value that is an option's name (`--json --json`, which would write
// a file called "--json") is a forgotten value. Both are refused (InputError naming the
// option), for every option of `cmd` that takes a value except the free text ones in
// `may_be_empty` (sample's --prompt).
void refuse_empty_values(const CLI::App& cmd, const std::vector<std::string>& may_be_empty = {});

// Every integer option of `app` and its subcommands refuses a whole number outside int64 as
// typed (InputError: "--seed 99999999999999999999 is out of range; ..."), checked before
// CLI11 converts it: CLI11 2.1 (Debian 12) would clamp it to the range's end and run with a
// number nobody typed, CLI11 2.4 (Debian 13) says only "Could not convert".
void refuse_out_of_range_integers(CLI::App& app);

// A --threads value: 0 (all cores) up to kMaxThreads, the range train.threads takes; a
// negative count means nothing, so it is an InputError naming the option, not a default.
void check_threads(int64_t threads, const std::string& option);

}  // namespace txl
