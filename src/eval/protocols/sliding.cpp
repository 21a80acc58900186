// sliding: windows of L tokens advanced by a stride S; the first window is scored whole,
// then only the last S positions of each window, so every target after the first window
// has at least L - S tokens of context (S = 1: exactly min(t, L-1)).
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocols/protocols.h"
#include "txl/util/error.h"

namespace txl {

int64_t effective_stride(const EvalRequest& request) {
  if (request.method != EvalMethod::kSliding) return 0;
  return request.stride > 0 ? request.stride : std::max<int64_t>(1, request.length / 2);
}

namespace {

// First window scored whole; the window ending at e scores targets [e - stride, e).
std::vector<PassRow> sliding_windows(const EvalRequest& r, int64_t targets) {
  const int64_t len = r.length;
  const int64_t stride = effective_stride(r);
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
  p.id = EvalMethod::kSliding;
  p.name = "sliding";
  p.description =
      "windows of L tokens advanced by the stride; the first window scored whole, then the "
      "last stride tokens of each window";
  p.cost = "L / stride tokens forwarded per token scored";
  p.unit = "window";
  p.options = {{"--stride", "stride", "sliding: window advance, 1 to L (default L/2)"}};
  p.needs_memory = false;
  p.check = [](const EvalRequest& r) {
    if (r.stride < 0 || r.stride > r.length) {
      throw InputError("--stride " + std::to_string(r.stride) +
                       " must be between 1 and the window length " + std::to_string(r.length));
    }
  };
  p.plan = [](const EvalRequest& r, int64_t targets) {
    return plan_windows(sliding_windows(r, targets), r);
  };
  p.largest_pass = [](const EvalRequest& r, int64_t targets) {
    const auto whole = whole_evaluation(r);
    return largest_planned_pass(plan_windows(sliding_windows(whole, targets), whole));
  };
  p.fill_result = [](const EvalRequest& r, int64_t, EvalResult& result) {
    result.stride = effective_stride(r);
  };
  p.cache_key = [](const EvalRequest& r, nlohmann::json& key) {
    key["stride"] = effective_stride(r);
    key["mem_len"] = 0;
    key["streams"] = 0;
  };
  p.setting = [](const EvalResult& e) { return fmt::format("stride {}", e.stride); };
  p.json_row = [](const EvalResult& e, nlohmann::json& row) { row["stride"] = e.stride; };
  p.position_note =
      "sliding scores positions before L - stride in the first window only, so those buckets "
      "hold few tokens";
  p.memory_hint = window_memory_hint;
  p.describe_pass = describe_window_pass;
  return p;
}

}  // namespace txl
