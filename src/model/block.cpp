#include "txl/model/block.h"

#include <cmath>
#include <limits>

#include "txl/model/fused_attention.h"
#include "txl/model/kernels.h"
#include "txl/model/positional.h"
#include "txl/model/sdpa_attention.h"

namespace txl {

namespace {

void init_linear(torch::nn::Linear& layer, double std) {
  torch::NoGradGuard no_grad;
  layer->weight.normal_(0.0, std);
  if (layer->bias.defined()) layer->bias.zero_();
}

}  // namespace

AttentionImpl::AttentionImpl(const ModelConfig& c)
    : n_head_(c.n_head),
      d_head_(c.d_head),
      pre_norm_(c.pre_norm),
      dropout_(c.dropout),
      dropatt_(c.dropatt) {
  const int64_t hd = c.n_head * c.d_head;
  qkv = register_module("qkv",
                        torch::nn::Linear(torch::nn::LinearOptions(c.d_model, 3 * hd).bias(false)));
  out = register_module("out",
                        torch::nn::Linear(torch::nn::LinearOptions(hd, c.d_model).bias(false)));
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  score = register_module("score", make_position_score(c));
  init_linear(qkv, c.init_std);
  init_linear(out, c.init_std);
}

torch::Tensor AttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k,
                                    const torch::Tensor& v, const PositionContext& pos) {
  const int64_t query_len = q.size(2);
  const auto terms = score->terms(q, k, pos);
  // The fast paths have no attention dropout and show no probabilities to an observer.
  const bool dropping = dropatt_ > 0 && is_training();
  // A same_length window that hides keys takes the masked path (the fast paths know only
  // the causal mask).
  const bool windowed = window_cuts(query_len, pos.mem_len, pos.key_window);
  if (!dropping && pos.observer == nullptr && !windowed) {
    if (fused_attention_applies(v)) return fused_attention(terms, v, pos.mem_len);  // [B, H, Q, D]
    if (sdpa_attention_applies(terms, v)) return sdpa_attention(terms, v, pos.mem_len);
  }
  auto scores = materialize(terms);  // [B, H, Q, K]
  // In place: the scores are a fresh tensor, and masked_fill_'s backward needs only the mask.
  scores.masked_fill_(attention_mask(query_len, pos.mem_len, pos.key_window, q.device()),
                      -std::numeric_limits<float>::infinity());
  // In the scores' dtype: LibTorch's CPU softmax (and its backward) on bf16 computes in
  // float32 and rounds only the result, so a float32 copy of the scores, its cast back and
  // their backward passes would buy nothing under autocast.
  auto probs = torch::softmax(scores, -1).to(v.dtype());  // [B, H, Q, K]
  if (pos.observer) pos.observer->observe(pos.layer, probs);
  probs = apply_dropout(probs, dropatt_, is_training());
  return batched_matmul(probs, v);  // [B, H, Q, D]
}

std::array<torch::Tensor, 3> AttentionImpl::project(const torch::Tensor& x,
                                                    const torch::Tensor& memory,
                                                    const PositionContext& pos) {
  const int64_t batch = x.size(0), query_len = x.size(1);
  const int64_t hd = n_head_ * d_head_;
  const bool has_memory = memory.defined() && memory.size(1) > 0;
  const bool kept = has_memory && pos.memory_kv.defined() && pos.memory_kv.size(0) == batch &&
                    pos.memory_kv.size(1) == memory.size(1);
  torch::Tensor q, k, v;
  if (!has_memory) {
    auto all = affine(x, qkv->weight);  // [B, Q, 3*H*D]
    if (pos.segment_kv != nullptr) *pos.segment_kv = all.narrow(2, hd, 2 * hd);
    // unbind, not three selects: its backward stacks the three gradients in one copy,
    // where each select's backward fills a zero tensor of the whole projection.
    auto qkv_all = all.view({batch, query_len, 3, n_head_, d_head_}).unbind(2);
    q = qkv_all[0];
    k = qkv_all[1];
    v = qkv_all[2];
  } else {
    torch::Tensor kv_flat, segment;  // keys and values [B, K, 2*H*D], the segment's [B, Q, ...]
    if (kept) {
      // Evaluation: the memory rows' keys and values as the previous pass projected them.
      auto all = affine(x, qkv->weight);  // [B, Q, 3*H*D]
      q = all.narrow(2, 0, hd).view({batch, query_len, n_head_, d_head_});
      segment = all.narrow(2, hd, 2 * hd);
      kv_flat = torch::cat({pos.memory_kv, segment}, /*dim=*/1);
    } else {
      // Queries only for the current segment; keys and values for memory too.
      auto mem = pre_norm_ ? norm(memory) : memory;  // [B, M, C]
      auto cat = torch::cat({mem, x}, /*dim=*/1);    // [B, K, C]
      q = affine(x, qkv->weight.narrow(0, 0, hd)).view({batch, query_len, n_head_, d_head_});
      kv_flat = affine(cat, qkv->weight.narrow(0, hd, 2 * hd));
      segment = kv_flat.narrow(1, memory.size(1), query_len);
    }
    if (pos.segment_kv != nullptr) *pos.segment_kv = segment;
    auto kv_parts = kv_flat.view({batch, -1, 2, n_head_, d_head_}).unbind(2);  // 2 x [B, K, H, D]
    k = kv_parts[0];
    v = kv_parts[1];
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_head_));
  return {q.transpose(1, 2) * scale, k.transpose(1, 2), v.transpose(1, 2)};  // [B, H, *, D]
}

torch::Tensor AttentionImpl::attend_in_blocks(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v, const PositionContext& pos,
                                              int64_t block) {
  const int64_t query_len = q.size(2), key_len = k.size(2), mem_len = pos.mem_len;
  auto ctx = torch::empty({q.size(0), n_head_, query_len, d_head_}, q.options());
  for (int64_t first = 0; first < query_len; first += block) {
    const int64_t len = std::min(block, query_len - first);
    const int64_t keys = mem_len + first + len;  // causality: later keys get no weight
    ctx.narrow(2, first, len)
        .copy_(attend(q.narrow(2, first, len), k.narrow(2, 0, keys), v.narrow(2, 0, keys),
                      block_context(pos, first, len, key_len)));
    if (pos.attention_progress) {
      // Keys seen so far over all keys, summed over queries: ((M + e)^2 - M^2) / (K^2 - M^2).
      const auto work = [&](int64_t end) {
        const double m = static_cast<double>(mem_len), e = static_cast<double>(end);
        return (m + e) * (m + e) - m * m;
      };
      pos.attention_progress(work(first + len) / work(query_len));
    }
  }
  return ctx;  // [B, H, Q, D]
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& h, const torch::Tensor& memory,
                                     const PositionContext& pos) {
  const int64_t batch = h.size(0), query_len = h.size(1);
  const int64_t mem_len = memory.defined() ? memory.size(1) : 0;
  const int64_t key_len = mem_len + query_len;

  auto x = pre_norm_ ? norm(h) : h;                // [B, Q, C]
  const auto [q, k, v] = project(x, memory, pos);  // [B, H, Q | K, D]
  PositionContext layer_pos = pos;
  layer_pos.mem_len = mem_len;
  const int64_t block = attention_query_block(batch, n_head_, query_len, key_len, pos.query_block,
                                              is_training() || torch::GradMode::is_enabled());
  auto ctx = block >= query_len ? attend(q, k, v, layer_pos)
                                : attend_in_blocks(q, k, v, layer_pos, block);  // [B, H, Q, D]
  ctx = ctx.transpose(1, 2).reshape({batch, query_len, n_head_ * d_head_});     // [B, Q, H*D]
  auto y = apply_dropout(affine(ctx, out->weight), dropout_, is_training());    // [B, Q, C]
  return pre_norm_ ? h + y : norm(h + y);
}

FeedForwardImpl::FeedForwardImpl(const ModelConfig& c)
    : pre_norm_(c.pre_norm), dropout_(c.dropout) {
  fc1 = register_module("fc1", torch::nn::Linear(c.d_model, c.d_inner));
  fc2 = register_module("fc2", torch::nn::Linear(c.d_inner, c.d_model));
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  init_linear(fc1, c.init_std);
  init_linear(fc2, c.init_std);
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& h) {
  auto x = pre_norm_ ? norm(h) : h;  // [B, Q, C]
  auto inner =
      relu_dropout(affine(x, fc1->weight, fc1->bias), dropout_, is_training());  // [B, Q, F]
  auto y =
      apply_dropout(affine(inner, fc2->weight, fc2->bias), dropout_, is_training());  // [B, Q, C]
  return pre_norm_ ? h + y : norm(h + y);
}

BlockImpl::BlockImpl(const ModelConfig& c) {
  attn = register_module("attn", Attention(c));
  ff = register_module("ff", FeedForward(c));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& h, const torch::Tensor& memory,
                                 const PositionContext& pos) {
  return ff(attn(h, memory, pos));
}

}  // namespace txl
