// nonoverlap: the split cut into windows of L tokens, each scored whole in its own window,
// no memory (the ALiBi paper's main protocol). Token t of a window has t tokens of context,
// so the mean over a window mixes every context length from 0 to L-1.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocol.h"

namespace txl {

namespace {

std::vector<PassRow> nonoverlap_windows(const EvalRequest& r, int64_t targets) {
  std::vector<PassRow> windows;
  for (int64_t s = 0; s < targets; s += r.length)
    windows.push_back({s, std::min(r.length, targets - s), 0});
  return windows;
}

}  // namespace

EvalProtocol nonoverlap_protocol() {
  EvalProtocol p;
  p.name = "nonoverlap";
  p.description = "windows of L tokens, no memory, every token scored";
  p.cost = "1 token forwarded per token scored";
  p.unit = "window";
  p.needs_memory = false;
  p.check = nullptr;
  p.plan = [](const EvalRequest& r, int64_t targets) {
    return plan_windows(nonoverlap_windows(r, targets), r);
  };
  p.largest_pass = [](const EvalRequest& r, int64_t targets) {
    const auto whole = whole_evaluation(r);
    return largest_planned_pass(plan_windows(nonoverlap_windows(whole, targets), whole));
  };
  p.as_trained = [](const TrainConfig& train, bool carries_memory, ProtocolSettings&) {
    return carries_memory && train.mem_len > 0 ? TrainingFit::kApplies : TrainingFit::kOwn;
  };
  p.adjust_result = nullptr;
  p.position_note = "";
  p.memory_hint = window_memory_hint;
  p.describe_pass = describe_window_pass;
  return p;
}

}  // namespace txl
