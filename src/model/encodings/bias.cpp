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

ScoreTerms BiasScore::terms(const torch::Tensor& q, const torch::Tensor& k,
                            const PositionContext& pos) {
  return {q, k, {}, bias(q.size(2), pos, q.device())};
}

}  // namespace txl
