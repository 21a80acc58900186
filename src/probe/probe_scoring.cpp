#include "txl/probe/probe_scoring.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_set>

#include "txl/eval/evaluate.h"

namespace txl {

std::vector<int64_t> draw_positions(SplitMix64& rng, int64_t count, int64_t lo, int64_t hi) {
  if (hi <= lo) throw std::invalid_argument("draw_positions: empty range");
  const int64_t range = hi - lo;
  const bool distinct = count <= range / 2;  // rejection stays cheap
  std::vector<int64_t> out;
  std::unordered_set<int64_t> seen;
  out.reserve(static_cast<size_t>(count));
  while (static_cast<int64_t>(out.size()) < count) {
    const int64_t p = lo + static_cast<int64_t>(rng.below(static_cast<size_t>(range)));
    if (distinct && !seen.insert(p).second) continue;
    out.push_back(p);
  }
  return out;
}

int64_t windows_per_pass(int64_t batch_tokens, int64_t length) {
  return std::max<int64_t>(1, batch_tokens / std::max<int64_t>(1, length - 1));
}

namespace {

void check_windows(const std::vector<std::vector<int32_t>>& windows, int64_t scored) {
  const int64_t n = static_cast<int64_t>(windows.front().size());
  if (n < 2 || scored < 1 || scored > n - 1)
    throw std::invalid_argument("score_windows: windows of " + std::to_string(n) +
                                " tokens cannot score " + std::to_string(scored));
  for (const auto& w : windows) {
    if (static_cast<int64_t>(w.size()) != n)
      throw std::invalid_argument("score_windows: windows differ in length");
  }
}

// Windows first..first+count-1 as [count, n] int64 on the model's device.
torch::Tensor stack_windows(const std::vector<std::vector<int32_t>>& windows, size_t first,
                            size_t count, const torch::Device& device) {
  const int64_t n = static_cast<int64_t>(windows.front().size());
  auto t = torch::empty({static_cast<int64_t>(count), n}, torch::kInt64);
  auto a = t.accessor<int64_t, 2>();
  for (size_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < n; ++i) a[static_cast<int64_t>(b)][i] = windows[first + b][i];
  }
  return t.to(device);
}

}  // namespace

ScoredWindows score_windows(TransformerLM& model, const std::vector<std::vector<int32_t>>& windows,
                            int64_t scored, const ProbeScoreOptions& options) {
  ScoredWindows out;
  if (windows.empty()) return out;
  check_windows(windows, scored);
  const int64_t n = static_cast<int64_t>(windows.front().size());
  const auto per_batch = static_cast<size_t>(windows_per_pass(options.batch_tokens, n));
  EvalModeGuard guard(model, options.precision);
  for (size_t first = 0; first < windows.size(); first += per_batch) {
    const size_t count = std::min(per_batch, windows.size() - first);
    const auto w = stack_windows(windows, first, count, model->device());  // [b, n]
    ForwardOptions f;
    f.targets = w.narrow(1, 1, n - 1);  // [b, n - 1]
    f.score_from = n - 1 - scored;
    f.want_scores = options.want_argmax;
    f.observer = options.observer;
    if (options.progress) {
      const double layers = static_cast<double>(model->config().n_layer);
      const double total = static_cast<double>(windows.size());
      f.progress = [&, first, count, layers, total](double done_layers) {
        options.progress((double(first) + double(count) * done_layers / layers) / total);
      };
    }
    const auto result = model->forward(w.narrow(1, 0, n - 1), Memory{}, f);
    const auto nll = result.nll.to(torch::kCPU, torch::kFloat64).contiguous();  // [b, scored]
    torch::Tensor argmax;
    if (options.want_argmax) argmax = result.scores.argmax(-1).to(torch::kCPU).contiguous();
    for (size_t b = 0; b < count; ++b) {
      const auto row = nll[static_cast<int64_t>(b)];
      out.nll.emplace_back(row.data_ptr<double>(), row.data_ptr<double>() + scored);
      if (options.want_argmax) {
        const auto arow = argmax[static_cast<int64_t>(b)];
        out.argmax.emplace_back(arow.data_ptr<int64_t>(), arow.data_ptr<int64_t>() + scored);
      }
    }
  }
  return out;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values) sum += v;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

Interval mean_interval(const std::vector<double>& values) {
  Interval i;
  const size_t n = values.size();
  if (n < 2) return i;
  const double m = mean_of(values);
  double ss = 0;
  for (const double v : values) ss += (v - m) * (v - m);
  const double half =
      1.959964 * std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
  i.valid = true;
  i.lo = m - half;
  i.hi = m + half;
  return i;
}

Interval proportion_interval(int64_t hits, int64_t trials) {
  Interval i;
  if (trials < 1) return i;
  const double z = 1.959964, n = static_cast<double>(trials);
  const double p = static_cast<double>(hits) / n;
  const double denom = 1 + z * z / n;
  const double centre = (p + z * z / (2 * n)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom;
  i.valid = true;
  i.lo = std::max(0.0, centre - half);
  i.hi = std::min(1.0, centre + half);
  return i;
}

}  // namespace txl
