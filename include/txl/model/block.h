// One Transformer-XL block: multi-head attention over [memory ; current] then a ReLU
// feed-forward, each with residual and LayerNorm (post-norm by default, pre-norm optional).
// Shapes follow the legend in positional.h.
#pragma once

#include <torch/torch.h>

#include <array>
#include <memory>

#include "txl/config/config.h"
#include "txl/model/position_score.h"

namespace txl {

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& config);
  // h: [B, Q, C] current segment; memory: [B, M, C] or undefined             -> [B, Q, C]
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& memory,
                        const PositionContext& pos);

  torch::nn::Linear qkv{nullptr};  // C -> 3*H*D, no bias (q from h, k and v from [mem ; h])
  torch::nn::Linear out{nullptr};  // H*D -> C, no bias
  torch::nn::LayerNorm norm{nullptr};
  std::shared_ptr<PositionScoreImpl> score;

 private:
  // softmax(masked scores) . v for queries q: [B, H, Q, D] against k, v: [B, H, K, D], the
  // queries being the last Q of the K keys (pos.mem_len = K - Q)          -> [B, H, Q, D]
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const PositionContext& pos);
  // attend() over blocks of `block` queries, each against the keys up to its last query
  // (the same numbers; a smaller [B, H, block, K] score tensor at a time)  -> [B, H, Q, D]
  torch::Tensor attend_in_blocks(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v, const PositionContext& pos, int64_t block);
  // q: [B, H, Q, D] scaled by 1/sqrt(D), from x: [B, Q, C] (normed); k, v: [B, H, K, D]
  // from the memory rows (or pos.memory_kv, their kept projection) then x. Puts x's key/value
  // projection [B, Q, 2*H*D] in *pos.segment_kv when that is set.
  std::array<torch::Tensor, 3> project(const torch::Tensor& x, const torch::Tensor& memory,
                                       const PositionContext& pos);

  int64_t n_head_, d_head_;
  bool pre_norm_;
  double dropout_, dropatt_;  // applied with txl::dropout (kernels.h)
};
TORCH_MODULE(Attention);

class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& h);  // [B, Q, C] -> [B, Q, C]

  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm norm{nullptr};

 private:
  bool pre_norm_;
  double dropout_;
};
TORCH_MODULE(FeedForward);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& memory,
                        const PositionContext& pos);

  Attention attn{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(Block);

}  // namespace txl
