// alibi (Press et al., "Train Short, Test Long"): b[h, i, j] = -m_h * n, not scaled by
// 1/sqrt(D); no position embedding anywhere. Fixed slopes m_h, see alibi_slopes.
#pragma once

#include <vector>

#include "txl/model/encodings/bias.h"

namespace txl {

// The paper's slopes: for H a power of two, geometric with first term and ratio 2^(-8/H);
// otherwise (its reference code) the slopes of the largest power of two c < H, then every
// other slope of the 2c-head set, the first H - c of them.
std::vector<double> alibi_slopes(int64_t n_head);

class AlibiScore : public BiasScore {
 public:
  explicit AlibiScore(int64_t n_head);
  torch::Tensor bias(int64_t query_len, const PositionContext& pos,
                     const torch::Device& device) override;

  torch::Tensor slopes;  // [H] buffer (saved with the model, not trained)
};

}  // namespace txl
