// learned_absolute (GPT-2 style): a learned table of model.max_len positions added to the
// token embeddings; attention sees q . k. Positions restart at 0 in every window: no memory,
// and no window longer than the table unless --aid interpolate reads the table at
// positions x 1/s (linear between rows; the derived s maps the window onto the rows
// training reached, min(max_len, train.tgt_len)).
#pragma once

#include "txl/model/position_score.h"

namespace txl {

class LearnedAbsoluteInput : public PositionInputImpl {
 public:
  LearnedAbsoluteInput(int64_t max_len, int64_t d_model, double init_std);
  torch::Tensor apply(const torch::Tensor& h, int64_t mem_len, PositionContext& pos) override;
  // Rows for positions 0..len-1, interpolated when the aid asks for it.         -> [len, C]
  torch::Tensor rows(int64_t len, const PositionContext& pos) const;

  torch::Tensor table;  // [max_len, C]
};

}  // namespace txl
