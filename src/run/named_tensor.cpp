// What both weight-file writers check of the tensors they are given (named_tensor.h).
#include "txl/run/named_tensor.h"

#include <spdlog/fmt/fmt.h>

#include <set>

#include "txl/util/error.h"

namespace txl {

void check_unique_names(const std::vector<NamedTensor>& tensors, const std::string& path) {
  std::set<std::string> seen;
  for (const auto& t : tensors) {
    if (t.name.empty()) throw InputError(path + ": a tensor without a name");
    if (!seen.insert(t.name).second)
      throw InputError(fmt::format("{}: tensor {} is given twice", path, t.name));
  }
}

}  // namespace txl
