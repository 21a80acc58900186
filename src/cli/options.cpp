#include "txl/cli/options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "txl/config/config.h"
#include "txl/util/error.h"
#include "txl/util/parse.h"

namespace txl {

std::vector<int64_t> parse_lengths(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  if (const auto bad = parse_positive_integers(text, out)) {
    throw InputError(option + " \"" + text + "\": \"" + *bad + "\" is not a positive integer");
  }
  if (out.empty()) throw InputError(option + " needs at least one length, e.g. 64,128,256");
  for (size_t i = 1; i < out.size(); ++i) {
    if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(i), out[i]) !=
        out.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw InputError(option + " \"" + text + "\": " + std::to_string(out[i]) +
                       " is given twice; list each length once");
    }
  }
  return out;
}

namespace {

// "--" then a letter and letters, digits or dashes: how every txl option is spelled.
bool looks_like_an_option(const std::string& value) {
  if (value.size() < 3 || value.compare(0, 2, "--") != 0 ||
      !std::isalpha(static_cast<unsigned char>(value[2]))) {
    return false;
  }
  return std::all_of(value.begin() + 2, value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
  });
}

// A whole number (digits, an optional sign) outside int64.
bool overflows_int64(const std::string& value) {
  size_t digits = value.size();
  if (!value.empty() && (value[0] == '-' || value[0] == '+')) --digits;
  if (digits == 0 || !std::all_of(value.end() - static_cast<std::ptrdiff_t>(digits), value.end(),
                                  [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  errno = 0;
  std::strtoll(value.c_str(), nullptr, 10);
  return errno == ERANGE;
}

}  // namespace

void refuse_empty_values(const CLI::App& cmd, const std::vector<std::string>& may_be_empty) {
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->count() == 0 || option->get_type_size_min() < 1) continue;  // absent, or a flag
    const std::string name = option->get_name();
    if (std::find(may_be_empty.begin(), may_be_empty.end(), name) != may_be_empty.end()) continue;
    for (const auto& value : option->results()) {
      if (looks_like_an_option(value)) {
        throw InputError(name + " is given \"" + value + "\", an option's name, as its value; " +
                         "give " + name + " a value (a file whose name starts with -- can be " +
                         "written ./" + value + ")");
      }
      if (!value.empty()) continue;
      throw InputError(name + " is given an empty value; give it one" +
                       (option->get_positional() ? std::string()
                                                 : ", or leave " + name + " out for its default"));
    }
  }
}

void refuse_out_of_range_integers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_name() != "INT") continue;  // CLI11's name for every signed integer
    const std::string name = option->get_name();
    option->check(CLI::Validator(
        [name](std::string& value) {
          if (overflows_int64(value)) {
            throw InputError(name + " " + value + " is out of range; whole numbers run from " +
                             std::to_string(std::numeric_limits<int64_t>::min()) + " to " +
                             std::to_string(std::numeric_limits<int64_t>::max()));
          }
          return std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_out_of_range_integers(*sub);
}

void check_threads(int64_t threads, const std::string& option) {
  if (threads < 0 || threads > kMaxThreads) {
    throw InputError(option + " " + std::to_string(threads) +
                     " is not valid; expected 0 (all cores) to " + std::to_string(kMaxThreads) +
                     " threads");
  }
}

}  // namespace txl
