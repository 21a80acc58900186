// sliding: windows of L tokens advanced by a stride S; the first window is scored whole,
// then only the last S positions of each window, so every target after the first window
// has at least L - S tokens of context (S = 1: exactly min(t, L-1)).
#include "txl/eval/protocols/sliding.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocol.h"
#include "txl/util/error.h"

namespace txl {

namespace {

using sliding_setting::kStride;

// First window scored whole; the window ending at e scores targets [e - stride, e).
std::vector<PassRow> sliding_windows(const EvalRequest& r, int64_t targets) {
  const int64_t len = r.length;
  const int64_t stride = resolved_setting(eval_protocol(r.protocol), r.settings, kStride, len);
  const int64_t first = std::min(len, targets);
  std::vector<PassRow> windows{{0, first, 0}};
  for (int64_t end = first + stride; end - stride < targets; end += stride) {
    const int64_t e = std::min(end, targets);
    const int64_t start = std::max<int64_t>(0, e - len);
    const int64_t scored = e - (end - stride);
    windows.push_back({start, e - start, e - start - scored});
  }
  return windows;
}

}  // namespace

EvalProtocol sliding_protocol() {
  EvalProtocol p;
  p.name = "sliding";
  p.description =
      "windows of L tokens advanced by the stride; the first window scored whole, then the "
      "last stride tokens of each window";
  p.cost = "L / stride tokens forwarded per token scored";
  p.unit = "window";
  p.settings = {
      number_setting(kStride, "--stride")
          .range(1, int64_t{1} << 40)
          .unset(0, "L/2", "L/2", [](int64_t length) { return std::max<int64_t>(1, length / 2); })
          .study_key("stride")
          .report("stride {}")
          .cache_tag("S")
          .doc("sliding: window advance, 1 to L (default L/2)"),
  };
  p.needs_memory = false;
  p.check = [](const EvalRequest& r, const SettingNamer& name) {
    const int64_t stride = r.settings.get(kStride);
    if (stride > r.length) {
      throw InputError(fmt::format(
          "{} {} is longer than the window length {}; a sliding window advances by 1 to L tokens",
          name(kStride), stride, r.length));
    }
  };
  p.plan = [](const EvalRequest& r, int64_t targets) {
    return plan_windows(sliding_windows(r, targets), r);
  };
  p.largest_pass = [](const EvalRequest& r, int64_t targets) {
    const auto whole = whole_evaluation(r);
    return largest_planned_pass(plan_windows(sliding_windows(whole, targets), whole));
  };
  p.as_trained = [](const TrainConfig&, bool, ProtocolSettings&) { return TrainingFit::kApplies; };
  p.adjust_result = nullptr;
  p.position_note =
      "sliding scores positions before L - stride in the first window only, so those buckets "
      "hold few tokens";
  p.memory_hint = window_memory_hint;
  p.describe_pass = describe_window_pass;
  return p;
}

}  // namespace txl
