// absolute: the sinusoids of Vaswani et al. added to the token embeddings; attention sees
// only q . k (ContentScore). Positions restart at 0 in every window, so no memory.
// Shapes: positional.h.
#pragma once

#include <torch/torch.h>

#include "txl/model/position_score.h"

namespace txl {

class AbsoluteSinusoidInput : public PositionInputImpl {
 public:
  explicit AbsoluteSinusoidInput(int64_t d_model) : d_model_(d_model) {}
  torch::Tensor apply(const torch::Tensor& h, int64_t mem_len, PositionContext& pos) override;

 private:
  int64_t d_model_;
};

}  // namespace txl
