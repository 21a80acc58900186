#include "txl/model/position_score.h"

#include <algorithm>

#include "txl/model/kernels.h"
#include "txl/model/positional.h"

namespace txl {

torch::Tensor materialize(const ScoreTerms& terms) {
  auto s = batched_matmul(terms.query, terms.key.transpose(-1, -2));  // [B, H, Q, K]
  // In place: s is a fresh product no backward formula needs, and this keeps one
  // [B, H, Q, K] tensor alive instead of three (matters at long evaluation windows).
  if (terms.shifted.defined()) s.add_(rel_shift_padded(terms.shifted));
  // Broadcast over the batch: one [H, Q, K] tensor, not a second [B, H, Q, K].
  if (terms.bias.defined()) s.add_(terms.bias.unsqueeze(0));
  return s;
}

torch::Tensor PositionScoreImpl::scores(const torch::Tensor& q, const torch::Tensor& k,
                                        const PositionContext& pos) {
  return materialize(terms(q, k, pos));
}

ScoreTerms ContentScore::terms(const torch::Tensor& q, const torch::Tensor& k,
                               const PositionContext& /*pos*/) {
  return {q, k, {}, {}};
}

torch::Tensor PositionInputImpl::apply(const torch::Tensor& h, int64_t /*mem_len*/,
                                       PositionContext& /*pos*/) {
  return h;
}

int64_t attention_query_block(int64_t batch, int64_t heads, int64_t query_len, int64_t key_len,
                              int64_t requested, bool grad) {
  if (grad || requested < 0 || query_len <= 1) return query_len;
  if (requested > 0) return std::min(requested, query_len);
  // Scores and probabilities, float32, at once.
  const int64_t row_bytes = 2 * batch * heads * key_len * 4;
  if (row_bytes * query_len <= kScoreBudgetBytes) return query_len;
  return std::clamp<int64_t>(kScoreBudgetBytes / row_bytes, 1, query_len);
}

PositionContext block_context(const PositionContext& pos, int64_t first, int64_t block_len,
                              int64_t key_len) {
  PositionContext b = pos;
  b.mem_len = pos.mem_len + first;
  const int64_t keys = b.mem_len + block_len;
  // Distances keys-1 .. 0: the last rows of the pass's sinusoids (distances key_len-1 .. 0).
  if (pos.sinusoids.defined()) b.sinusoids = pos.sinusoids.narrow(0, key_len - keys, keys);
  return b;
}

}  // namespace txl
