// A reader of attention probabilities during a forward pass (the attention-statistics probe,
// probe/attention_stats.h). The ordinary path pays one null-pointer test per attention call:
// nothing is kept or copied unless an observer is given (ForwardOptions::observer).
// Shapes follow the legend in positional.h.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace txl {

class AttentionObserver {
 public:
  virtual ~AttentionObserver() = default;
  // probs: [B, H, q, K] softmax weights (rows sum to 1) of layer `layer` (0-based) for q
  // queries that are the last q of the K keys: query i sits at key position K - q + i, so
  // its distance to key j is K - q + i - j. Attention in query blocks calls this once per
  // block, memory included in K.
  virtual void observe(int64_t layer, const torch::Tensor& probs) = 0;
};

}  // namespace txl
