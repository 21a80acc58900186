#include "txl/cli/options.h"

#include <sstream>

#include "txl/util/error.h"

namespace txl {

std::vector<int64_t> parse_lengths(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || value < 1) {
      throw InputError(option + " \"" + text + "\": \"" + item + "\" is not a positive integer");
    }
    out.push_back(value);
  }
  if (out.empty()) throw InputError(option + " needs at least one length, e.g. 64,128,256");
  return out;
}

}  // namespace txl
