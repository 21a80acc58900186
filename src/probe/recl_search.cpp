#include "txl/probe/recl_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace txl {

int64_t top_count(double ratio, int64_t n) {
  const auto k = static_cast<int64_t>(std::ceil(ratio * static_cast<double>(n) - 1e-9));
  return std::clamp<int64_t>(k, 1, n);
}

std::vector<size_t> top_targets(const std::vector<double>& values, double ratio) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] > values[b]; });
  order.resize(static_cast<size_t>(top_count(ratio, static_cast<int64_t>(values.size()))));
  return order;
}

namespace {

// b(c_k, t) for every target.
std::vector<double> baseline(const ContextLossTable& t, size_t k) {
  std::vector<double> b = t.losses.front()[k];
  for (const auto& model : t.losses) {
    for (size_t j = 0; j < b.size(); ++j) b[j] = std::min(b[j], model[k][j]);
  }
  return b;
}

// g_i(c_k, c_{k+1}) and the unnormalised gain, for model i, on the targets `top`.
std::pair<double, double> step_gain(const ContextLossTable& t, size_t i, size_t k,
                                    const std::vector<double>& b, const std::vector<size_t>& top) {
  double same = 0, next = 0;  // f_i(c, c), f_i(c, c') as sums
  for (const size_t j : top) {
    same += std::min(b[j], t.losses[i][k][j]);
    next += std::min(b[j], t.losses[i][k + 1][j]);
  }
  const double n = static_cast<double>(top.size());
  const double e_same = std::exp(same / n), e_next = std::exp(next / n);
  return {(e_same - e_next) / e_same, e_same - e_next};
}

// Model i's own mean loss over `top` at c_k and c_{k+1}, and the 95% lower bound of the paired
// rise (normal approximation over the targets).
void add_own_losses(const ContextLossTable& t, size_t i, size_t k, const std::vector<size_t>& top,
                    ReclStep& step) {
  double from = 0, to = 0, sum = 0, sum_sq = 0;
  for (const size_t j : top) {
    const double d = t.losses[i][k + 1][j] - t.losses[i][k][j];
    from += t.losses[i][k][j];
    to += t.losses[i][k + 1][j];
    sum += d;
    sum_sq += d * d;
  }
  const double n = static_cast<double>(top.size());
  const double mean = sum / n;
  const double var = n > 1 ? std::max(0.0, (sum_sq - n * mean * mean) / (n - 1)) : 0.0;
  step.own_from.push_back(from / n);
  step.own_to.push_back(to / n);
  step.own_rise_lo.push_back(n > 1 ? mean - 1.96 * std::sqrt(var / n) : -INFINITY);
}

ReclCurve recl_curve(const ContextLossTable& t, double ratio, double threshold) {
  const size_t models = t.models.size(), grid = t.contexts.size();
  ReclCurve curve;
  curve.ratio = ratio;
  for (size_t k = 0; k + 1 < grid; ++k) {
    const auto b = baseline(t, k);
    const auto top = top_targets(b, ratio);
    ReclStep step;
    step.from = t.contexts[k];
    step.to = t.contexts[k + 1];
    for (size_t i = 0; i < models; ++i) {
      const auto [relative, absolute] = step_gain(t, i, k, b, top);
      step.relative_gain.push_back(relative);
      step.gain.push_back(absolute);
      add_own_losses(t, i, k, top, step);
      step.flattening.push_back(relative >= threshold && step.own_rise_lo.back() > 0);
    }
    curve.steps.push_back(std::move(step));
  }
  for (size_t i = 0; i < models; ++i) {
    size_t k = 0;
    while (k + 1 < grid && curve.steps[k].relative_gain[i] >= threshold) ++k;
    curve.recl.push_back(t.contexts[k]);
    curve.at_grid_end.push_back(k + 1 == grid);
    k = 0;
    while (k + 1 < grid && curve.steps[k].relative_gain[i] >= threshold &&
           !curve.steps[k].flattening[i])
      ++k;
    curve.recl_without_flattening.push_back(t.contexts[k]);
  }
  return curve;
}

}  // namespace

ReclResult compute_recl(const ContextLossTable& table, const ReclOptions& options) {
  check_loss_table(table);
  if (table.models.empty()) throw std::invalid_argument("compute_recl: no models");
  ReclResult r;
  r.models = table.models;
  r.contexts = table.contexts;
  for (const double ratio : options.ratios) {
    if (!(ratio > 0 && ratio <= 1)) throw std::invalid_argument("RECL ratio must lie in (0, 1]");
    r.curves.push_back(recl_curve(table, ratio, options.threshold));
  }
  return r;
}

}  // namespace txl
