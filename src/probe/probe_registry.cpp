// The registry of probes, in the order reports show them.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/encodings.h"
#include "txl/probe/probes.h"
#include "txl/util/error.h"

namespace txl {

const std::vector<Probe>& probe_registry() {
  static const std::vector<Probe> registry = {
      recl_probe(),
      copy_probe(),
      passkey_probe(),
      attention_probe(),
  };
  return registry;
}

int64_t longest_length(const ProbeSubject& subject) {
  if (subject.lengths.empty()) return subject.config->train.tgt_len;
  return *std::max_element(subject.lengths.begin(), subject.lengths.end());
}

void check_window_fits(const ProbeSubject& subject, int64_t window, const std::string& option) {
  const int64_t limit = position_limit(subject.config->model);
  if (window <= limit) return;
  throw InputError(fmt::format(
      "{} asks for windows of {} tokens, past the {} positions of model.pos_encoding {} "
      "(model.{}); use smaller values",
      option, window, limit, to_string(subject.config->model.pos_encoding),
      encoding_traits(subject.config->model.pos_encoding).length_limit_key));
}

}  // namespace txl
