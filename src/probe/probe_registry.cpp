// The registry of probes, in the order reports show them.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocol.h"
#include "txl/probe/probe.h"
#include "txl/util/error.h"

namespace txl {

// The registered probes, one file each in src/probe/probes/: a new one is its file, a
// declaration here and a line in the registry.
Probe recl_probe();       // probes/recl.cpp
Probe copy_probe();       // probes/copy.cpp
Probe passkey_probe();    // probes/passkey.cpp
Probe attention_probe();  // probes/attention.cpp

const std::vector<Probe>& probe_registry() {
  static const std::vector<Probe> registry = {
      recl_probe(),
      copy_probe(),
      passkey_probe(),
      attention_probe(),
  };
  return registry;
}

std::vector<int64_t> default_lengths(const ProbeSubject& subject) {
  std::vector<int64_t> taken;
  for (const int64_t length : subject.lengths) {
    if (window_past_table(subject.config->model, length).empty()) taken.push_back(length);
  }
  return taken.empty() ? subject.lengths : taken;
}

int64_t longest_length(const ProbeSubject& subject) {
  const std::vector<int64_t> lengths = default_lengths(subject);
  if (lengths.empty()) return subject.config->train.tgt_len;
  return *std::max_element(lengths.begin(), lengths.end());
}

void check_window_fits(const ProbeSubject& subject, int64_t window, const std::string& option) {
  const std::string past = window_past_table(subject.config->model, window);
  if (past.empty()) return;
  throw InputError(fmt::format("{} asks for windows of {} tokens, {}; use smaller values", option,
                               window, past));
}

}  // namespace txl
