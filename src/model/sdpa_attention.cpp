#include "txl/model/sdpa_attention.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "txl/model/positional.h"
#include "txl/platform/torch_compat.h"
#include "txl/util/env.h"

namespace txl {

bool sdpa_attention_applies(const ScoreTerms& terms, const torch::Tensor& v) {
  if (!kHasScaledDotProductAttention || terms.shifted.defined() || !v.is_cuda()) return false;
  if (terms.bias.defined() && terms.bias.requires_grad()) return false;
  return !env_is("TXL_SDPA", "0");
}

torch::Tensor sdpa_attention(const ScoreTerms& terms, const torch::Tensor& v, int64_t mem_len) {
  TORCH_CHECK(!terms.shifted.defined(), "sdpa_attention takes no shifted (relative) term");
  const auto& q = terms.query;
  const int64_t query_len = q.size(2);
  torch::Tensor mask;
  bool causal = false;
  if (terms.bias.defined()) {
    // The bias with the future at -inf, in the queries' dtype: [H, Q, K].
    mask = terms.bias.detach()
               .masked_fill(causal_mask(query_len, mem_len, q.device()),
                            -std::numeric_limits<float>::infinity())
               .to(q.dtype());
  } else if (mem_len > 0) {
    mask = causal_mask(query_len, mem_len, q.device()).logical_not();  // [Q, K] true: visible
  } else {
    causal = true;  // the operator's own mask is top-left aligned: right only for K = Q
  }
  // The queries arrive scaled by 1/sqrt(D) (position_score.h): scale 1.
  return scaled_dot_product_attention(q, terms.key, v, mask, causal, 1.0);
}

}  // namespace txl
