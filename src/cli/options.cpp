#include "txl/cli/options.h"

#include <filesystem>

#include "txl/config/config.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/parse.h"

namespace txl {

std::vector<int64_t> parse_lengths(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  if (const auto bad = parse_positive_integers(text, out)) {
    throw InputError(option + " \"" + text + "\": \"" + *bad + "\" is not a positive integer");
  }
  if (out.empty()) throw InputError(option + " needs at least one length, e.g. 64,128,256");
  return out;
}

void check_output_path(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  if (is_directory(path))
    throw InputError(option + " " + path + " is a directory; expected a file path");
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !is_directory(parent.string())) {
    throw InputError(option + " " + path + ": directory " + parent.string() + " does not exist");
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
