#include "txl/util/parse.h"

#include <sstream>

namespace txl {

std::optional<std::string> parse_positive_integers(const std::string& text,
                                                   std::vector<int64_t>& out) {
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
    if (used == 0 || used != item.size() || value < 1) return item;
    out.push_back(value);
  }
  if (!text.empty() && text.back() == ',') return "";  // getline drops a trailing empty item
  return std::nullopt;
}

}  // namespace txl
