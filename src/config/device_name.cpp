#include <cctype>
#include <regex>

#include "txl/config/config.h"
#include "txl/config/config_ranges.h"

namespace txl {

int device_cuda_index(const std::string& name) {
  if (name == "cuda") return -1;
  const std::string prefix = "cuda:";
  if (name.rfind(prefix, 0) != 0) return -2;
  const std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 4) return -2;
  for (const char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -2;
  }
  return std::stoi(digits);
}

// The pattern the JSON Schema states is the one validate() applies.
bool is_device_name(const std::string& name) {
  static const std::regex pattern(device_name_pattern());
  return std::regex_match(name, pattern);
}

}  // namespace txl
