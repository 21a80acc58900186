#include "txl/model/sdpa_attention.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "txl/model/positional.h"
#include "txl/platform/torch_compat.h"
#include "txl/util/env.h"

namespace txl {

namespace {

// Whether the logits have a part besides query . key that takes a gradient: the relative
// encodings' shifted term, or a learned bias (t5, kerple, fire).
bool has_learned_position_term(const ScoreTerms& terms) {
  return terms.shifted.defined() || (terms.bias.defined() && terms.bias.requires_grad());
}

}  // namespace

bool sdpa_attention_applies(const ScoreTerms& terms, const torch::Tensor& v) {
  if (!kHasScaledDotProductAttention || !v.is_cuda() || env_is("TXL_SDPA", "0")) return false;
  return !has_learned_position_term(terms) || !env_is("TXL_SDPA_POSITION", "0");
}

torch::Tensor sdpa_attention(const ScoreTerms& terms, const torch::Tensor& v, int64_t mem_len) {
  const auto& q = terms.query;
  const int64_t query_len = q.size(2);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  torch::Tensor mask;
  bool causal = false;
  if (terms.shifted.defined() || terms.bias.defined()) {
    // Everything but query . key, with the future at -inf, as an additive mask: alibi's fixed
    // bias [1, H, Q, K], or a learned term, which takes its gradient through the mask
    // ([B, H, Q, K] for the relative encodings' shifted term).
    torch::Tensor position;
    if (terms.shifted.defined()) position = rel_shift_padded(terms.shifted);
    if (terms.bias.defined()) {
      const auto bias = terms.bias.unsqueeze(0);
      position = position.defined() ? position + bias : bias;
    }
    mask =
        position.masked_fill(causal_mask(query_len, mem_len, q.device()), minus_inf).to(q.dtype());
  } else if (mem_len > 0) {
    mask = causal_mask(query_len, mem_len, q.device()).logical_not();  // [Q, K] true: visible
  } else {
    causal = true;  // the operator's own mask is top-left aligned: right only for K = Q
  }
  // The queries arrive scaled by 1/sqrt(D) (position_score.h): scale 1.
  return scaled_dot_product_attention(q, terms.key, v, mask, causal, 1.0);
}

}  // namespace txl
