#include "txl/model/encodings/bias.h"

#include "txl/model/kernels.h"

namespace txl {

torch::Tensor query_key_distances(int64_t query_len, int64_t mem_len, int64_t clamp_len,
                                  const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto i = torch::arange(mem_len, mem_len + query_len, opts).unsqueeze(1);  // [Q, 1]
  auto j = torch::arange(mem_len + query_len, opts).unsqueeze(0);           // [1, K]
  auto n = (i - j).clamp_min(0);                                            // [Q, K]
  return clamp_len > 0 ? n.clamp_max(clamp_len) : n;
}

torch::Tensor BiasScore::scores(const torch::Tensor& q, const torch::Tensor& k,
                                const PositionContext& pos) {
  auto s = batched_matmul(q, k.transpose(-1, -2));  // [B, H, Q, K]
  // In place, broadcast over the batch: one [H, Q, K] tensor, not a second [B, H, Q, K].
  return s.add_(bias(q.size(2), pos, q.device()).unsqueeze(0));
}

}  // namespace txl
