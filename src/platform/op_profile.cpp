#include "txl/platform/op_profile.h"

#include <spdlog/fmt/fmt.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <map>

namespace txl {

namespace prof = torch::autograd::profiler;

OpProfiler::OpProfiler() {
  prof::enableProfilerLegacy(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
  running_ = true;
}

OpProfiler::~OpProfiler() {
  if (running_) prof::disableProfilerLegacy();
}

std::vector<OpTime> OpProfiler::stop() {
  running_ = false;
  const prof::thread_event_lists lists = prof::disableProfilerLegacy();

  std::map<std::string, OpTime> by_name, by_pair;
  struct Open {
    const prof::LegacyEvent* push;
    double child_us;
  };
  for (const auto& events : lists) {
    // Ranges on one thread nest; a pop closes the innermost open range with its handle.
    std::vector<Open> stack;
    for (const auto& e : events) {
      if (e.kind() == prof::EventKind::PushRange) {
        stack.push_back({&e, 0.0});
      } else if (e.kind() == prof::EventKind::PopRange) {
        auto it = std::find_if(stack.rbegin(), stack.rend(),
                               [&](const Open& o) { return o.push->handle() == e.handle(); });
        if (it == stack.rend()) continue;
        const size_t index = static_cast<size_t>(std::distance(it, stack.rend())) - 1;
        const Open open = stack[index];
        stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(index), stack.end());
        const double total_us = open.push->cpuElapsedUs(e);
        if (!stack.empty()) stack.back().child_us += total_us;
        const std::string name = open.push->name();
        const std::string pair =
            name + " <- " +
            (stack.empty() ? std::string("(top)") : std::string(stack.back().push->name()));
        for (auto* row : {&by_name[name], &by_pair[pair]}) {
          row->calls += 1;
          row->total_ms += total_us / 1000.0;
          row->self_ms += (total_us - open.child_us) / 1000.0;
        }
        by_name[name].name = name;
        by_pair[pair].name = pair;
      }
    }
  }
  auto sorted = [](const std::map<std::string, OpTime>& m) {
    std::vector<OpTime> rows;
    rows.reserve(m.size());
    for (const auto& [name, row] : m) rows.push_back(row);
    std::sort(rows.begin(), rows.end(),
              [](const OpTime& a, const OpTime& b) { return a.self_ms > b.self_ms; });
    return rows;
  };
  by_caller_ = sorted(by_pair);
  return sorted(by_name);
}

std::string format_op_table(const std::vector<OpTime>& ops, double wall_ms, size_t top) {
  std::string out = fmt::format("{:<64} {:>7} {:>10} {:>7} {:>10}\n", "operator (self time)",
                                "calls", "self ms", "self %", "total ms");
  double shown = 0.0, all = 0.0;
  for (size_t i = 0; i < ops.size(); ++i) {
    all += ops[i].self_ms;
    if (i >= top) continue;
    shown += ops[i].self_ms;
    out += fmt::format("{:<64} {:>7} {:>10.1f} {:>6.1f}% {:>10.1f}\n", ops[i].name.substr(0, 64),
                       ops[i].calls, ops[i].self_ms, 100.0 * ops[i].self_ms / wall_ms,
                       ops[i].total_ms);
  }
  out += fmt::format("{:<64} {:>7} {:>10.1f} {:>6.1f}%\n", "(other operators)", "", all - shown,
                     100.0 * (all - shown) / wall_ms);
  out += fmt::format("{:<64} {:>7} {:>10.1f} {:>6.1f}%\n", "(outside any operator)", "",
                     wall_ms - all, 100.0 * (wall_ms - all) / wall_ms);
  return out;
}

}  // namespace txl
