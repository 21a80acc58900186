// fire (Li et al., "Functional Interpolation for Relative Positions"): b[h, i, j] =
// f(psi(n) / psi(max(L, p_i)))_h with psi(x) = log(c x + 1), p_i = M + i the query's
// position in [memory; segment], f an MLP 1 -> 32 -> H with ReLU, c and L learned (kept
// positive by |.|; c starts at 0.1, L at model.fire_threshold). One MLP per layer.
#pragma once

#include "txl/model/encodings/bias.h"

namespace txl {

inline constexpr int64_t kFireHidden = 32;

class FireScore : public BiasScore {
 public:
  FireScore(int64_t n_head, double threshold, double init_std);
  torch::Tensor bias(int64_t query_len, const PositionContext& pos,
                     const torch::Device& device) override;
  // psi(n) / psi(max(L, p)) for distances n [Q, K] and query positions p [Q, 1]. -> [Q, K]
  torch::Tensor normalized_distance(const torch::Tensor& n, const torch::Tensor& p) const;

  torch::nn::Linear fc1{nullptr}, fc2{nullptr};  // 1 -> 32, 32 -> H
  torch::Tensor c, threshold;                    // [1] each
};

}  // namespace txl
