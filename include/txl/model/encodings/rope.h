// rope (Su et al., RoFormer): q and k rotated by their positions, q . k depending on the
// distance only; values untouched; every layer. Layout "rotate half": dimension j pairs with
// j + D/2 (not weight-compatible with the interleaved layout). With memory, keys take
// positions 0..K-1 of [memory; segment] and queries the last Q of them.
//   angle(p, j) = p * theta_j,  theta_j = base^(-2j/D),  j = 0..D/2-1
// Evaluation aids (encodings.h) change theta and, for YaRN, scale cos and sin by a
// temperature t (the logits by t^2).
#pragma once

#include <vector>

#include "txl/config/encodings.h"
#include "txl/model/position_score.h"

namespace txl {

struct RopeFrequencies {
  std::vector<double> theta;  // [D/2] after the aid
  double temperature = 1.0;   // YaRN's 0.1 ln s + 1; 1 otherwise
};

// theta for head width D and base b under `aid` with scale s >= 1 and training length L:
//   pi: theta_j / s;  ntk: base b * s^(D/(D-2));  yarn: r_j = L / (2 pi / theta_j),
//   gamma_j = clamp((r_j - 1) / (32 - 1), 0, 1), theta_j' = (1 - gamma_j) theta_j / s +
//   gamma_j theta_j, t = 0.1 ln s + 1. Dynamic forms take s as given here.
RopeFrequencies rope_frequencies(int64_t d_head, double base, ExtrapolationAid aid, double scale,
                                 int64_t train_len);

// x rotated at positions first..first+T-1: x * cos + rotate_half(x) * sin.  [..., T, D]
torch::Tensor rotate(const torch::Tensor& x, int64_t first, const RopeFrequencies& f);

class RopeScore : public PositionScoreImpl {
 public:
  RopeScore(int64_t d_head, double base) : d_head_(d_head), base_(base) {}
  ScoreTerms terms(const torch::Tensor& q, const torch::Tensor& k,
                   const PositionContext& pos) override;

 private:
  int64_t d_head_;
  double base_;
};

}  // namespace txl
