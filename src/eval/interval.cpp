#include "txl/eval/interval.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "txl/model/sampling.h"  // SplitMix64

namespace txl {

namespace {

// Percentile interval of ratio statistics sum(num[i]) / sum(den[i]) over resampled indices.
Interval bootstrap_ratio(const std::vector<double>& num, const std::vector<int64_t>& den,
                         const BootstrapOptions& o) {
  Interval out;
  const size_t n = num.size();
  if (n < 2 || o.resamples < 2) return out;
  SplitMix64 rng(o.seed);
  std::vector<double> stats;
  stats.reserve(static_cast<size_t>(o.resamples));
  for (int64_t r = 0; r < o.resamples; ++r) {
    double s = 0.0;
    int64_t t = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = rng.below(n);
      s += num[i];
      t += den[i];
    }
    if (t > 0) stats.push_back(s / static_cast<double>(t));
  }
  if (stats.size() < 2) return out;
  std::sort(stats.begin(), stats.end());
  const double tail = (1.0 - o.level) / 2.0;
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(stats.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, stats.size() - 1);
    return stats[lo] + (pos - static_cast<double>(lo)) * (stats[hi] - stats[lo]);
  };
  out.valid = true;
  out.lo = at(tail);
  out.hi = at(1.0 - tail);
  return out;
}

}  // namespace

std::string describe(const BootstrapOptions& o) {
  return fmt::format("{:.0f}% percentile bootstrap over windows ({} resamples, seed {})",
                     o.level * 100, o.resamples, o.seed);
}

nlohmann::json to_json(const BootstrapOptions& o) {
  return {{"method", "percentile bootstrap over windows"},
          {"level", o.level},
          {"resamples", o.resamples},
          {"seed", o.seed}};
}

Interval mean_nll_interval(const EvalResult& r, const BootstrapOptions& o) {
  return bootstrap_ratio(r.window_nll, r.window_tokens, o);
}

double PairedDifference::ppl_ratio() const { return std::exp(mean_diff); }

PairedDifference paired_difference(const EvalResult& a, const EvalResult& b,
                                   const BootstrapOptions& o) {
  if (a.window_tokens != b.window_tokens || a.window_nll.size() != a.window_tokens.size() ||
      b.window_nll.size() != b.window_tokens.size()) {
    throw std::invalid_argument(
        fmt::format("paired difference needs the same windows: {} windows / {} tokens vs {} "
                    "windows / {} tokens",
                    a.window_tokens.size(), a.tokens, b.window_tokens.size(), b.tokens));
  }
  std::vector<double> diff(a.window_nll.size());
  for (size_t i = 0; i < diff.size(); ++i) diff[i] = a.window_nll[i] - b.window_nll[i];
  PairedDifference out;
  out.tokens = a.tokens;
  out.windows = static_cast<int64_t>(diff.size());
  out.mean_diff = a.tokens > 0 ? (a.nll - b.nll) / static_cast<double>(a.tokens) : 0.0;
  out.diff = bootstrap_ratio(diff, a.window_tokens, o);
  return out;
}

}  // namespace txl
