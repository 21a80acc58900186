// Encodings that add a bias to the content score: q . k + b[h, i, j], the bias a function
// of the distance n = M + i - j (query i of the segment, key j of [memory; segment]).
// ALiBi, T5, KERPLE and FIRE are BiasScore subclasses. Shapes: positional.h.
#pragma once

#include <torch/torch.h>

#include "txl/model/position_score.h"

namespace txl {

// n = max(M + i - j, 0) for query i, key j (the masked future clamps to 0), capped at
// clamp_len when that is > 0.                                              -> int64 [Q, K]
torch::Tensor query_key_distances(int64_t query_len, int64_t mem_len, int64_t clamp_len,
                                  const torch::Device& device = torch::kCPU);

class BiasScore : public PositionScoreImpl {
 public:
  ScoreTerms terms(const torch::Tensor& q, const torch::Tensor& k,
                   const PositionContext& pos) override;
  // The bias of every head for this pass (already on the scores' scale).   -> [H, Q, K]
  virtual torch::Tensor bias(int64_t query_len, const PositionContext& pos,
                             const torch::Device& device) = 0;
};

}  // namespace txl
