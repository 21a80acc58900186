#include "txl/model/position_score.h"

#include "txl/model/kernels.h"

namespace txl {

torch::Tensor ContentScore::scores(const torch::Tensor& q, const torch::Tensor& k,
                                   const PositionContext& /*pos*/) {
  return batched_matmul(q, k.transpose(-1, -2));  // [B, H, Q, K]
}

torch::Tensor PositionInputImpl::apply(const torch::Tensor& h, int64_t /*mem_len*/,
                                       PositionContext& /*pos*/) {
  return h;
}

}  // namespace txl
