// kerple (Chi et al., the logarithmic variant, the paper's best): b[h, i, j] =
// -r1_h * log(1 + r2_h * n), r1, r2 > 0 learned per head (kept positive by softplus; both
// start at 1).
#pragma once

#include "txl/model/encodings/bias.h"

namespace txl {

class KerpleScore : public BiasScore {
 public:
  explicit KerpleScore(int64_t n_head);
  torch::Tensor bias(int64_t query_len, const PositionContext& pos,
                     const torch::Device& device) override;
  torch::Tensor r1() const;  // [H] softplus(raw_r1)
  torch::Tensor r2() const;  // [H]

  torch::Tensor raw_r1, raw_r2;  // [H]
};

}  // namespace txl
