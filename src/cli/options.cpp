#include "txl/cli/options.h"

#include <algorithm>

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

void refuse_empty_values(const CLI::App& cmd, const std::vector<std::string>& may_be_empty) {
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->count() == 0 || option->get_type_size_min() < 1) continue;  // absent, or a flag
    const std::string name = option->get_name();
    if (std::find(may_be_empty.begin(), may_be_empty.end(), name) != may_be_empty.end()) continue;
    for (const auto& value : option->results()) {
      if (!value.empty()) continue;
      throw InputError(name + " is given an empty value; give it one" +
                       (option->get_positional() ? std::string()
                                                 : ", or leave " + name + " out for its default"));
    }
  }
}

void check_threads(int64_t threads, const std::string& option) {
  if (threads < 0 || threads > kMaxThreads) {
    throw InputError(option + " " + std::to_string(threads) +
                     " is not valid; expected 0 (all cores) to " + std::to_string(kMaxThreads) +
                     " threads");
  }
}

}  // namespace txl
