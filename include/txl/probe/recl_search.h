// RECL, the relative effective context length of Transformer-XL (Dai et al. 2019, Section
// 4.3 and Appendix C), computed from a group's loss tables (context_losses.h).
//
// For models m_1..m_N with losses l_i(c, t):
//   baseline     b(c, t) = min_i l_i(c, t)
//   targets      T(c) = the ceil(r x n) targets with the largest b(c, t) (ties: earlier first)
//   relative loss f_i(c, c') = mean over t in T(c) of min(b(c, t), l_i(c', t))
//   relative gain g_i(c, c') = (exp f_i(c, c) - exp f_i(c, c')) / exp f_i(c, c)
// Search from c = c_0: while c' = c + Delta is on the grid and g_i(c, c') >= threshold (the
// paper's 0.01), c = c'. RECL_i = the last c. A RECL at the grid's last value is a lower
// bound (`at_grid_end`). Figure 3's curve is g at every step of the grid.
//
// Gain from flattening: min(b, l) counts a target whose loss falls below the baseline and
// clips one whose loss rises, so a model whose predictions flatten (lower loss on the hardest
// targets, higher on the rest) shows gain while its own loss gets worse. Each step therefore
// also carries the model's own mean loss over the same targets T(c) at c and at c', with a 95%
// interval on the paired rise; a step with g >= threshold whose own loss rises by more than
// that interval is marked `flattening`. `recl_without_flattening` is the same search stopping
// at a marked step too; RECL itself is the paper's number, unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/probe/context_losses.h"

namespace txl {

struct ReclOptions {
  std::vector<double> ratios = {0.1, 0.5, 1.0};  // r
  double threshold = 0.01;
};

struct ReclStep {
  int64_t from = 0, to = 0;              // c, c'
  std::vector<double> relative_gain;     // [N] g_i(c, c')
  std::vector<double> gain;              // [N] exp f_i(c, c) - exp f_i(c, c') (Figure 3)
  std::vector<double> own_from, own_to;  // [N] mean l_i(c, t), l_i(c', t) over t in T(c)
  std::vector<double> own_rise_lo;       // [N] the paired rise's 95% lower bound
  std::vector<bool> flattening;          // [N] gain while the own loss rises (see above)
};

struct ReclCurve {
  double ratio = 0.0;
  std::vector<int64_t> recl;                     // [N]
  std::vector<bool> at_grid_end;                 // [N] the search stopped at the grid's end
  std::vector<int64_t> recl_without_flattening;  // [N] stopping at a flattening step too
  std::vector<ReclStep> steps;                   // every consecutive pair of the grid
};

struct ReclResult {
  std::vector<std::string> models;
  std::vector<int64_t> contexts;
  std::vector<ReclCurve> curves;  // one per ratio
};

// ceil(ratio x n), within [1, n].
int64_t top_count(double ratio, int64_t n);
// The indices of the top_count(ratio, n) largest values (ties: the smaller index first).
std::vector<size_t> top_targets(const std::vector<double>& values, double ratio);

ReclResult compute_recl(const ContextLossTable& table, const ReclOptions& options);

}  // namespace txl
