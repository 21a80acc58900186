// The seam every position encoding plugs into. An encoding has up to two parts:
//   PositionInputImpl  once per model: what it adds to the token embeddings and what it
//                      prepares once per forward pass for every layer (PositionContext)
//   PositionScoreImpl  once per layer: turns queries and keys into attention logits
//                      [B, H, Q, K] (before masking), position terms included
// Both are built from model.pos_encoding through the factory table (encoding_registry.cpp,
// gathering each encoding's factory, encoding_factory.h); attention and the model have no
// encoding switch. What an encoding is and costs (memory, options, parameters, FLOPs) is in
// config/encodings.h; the modules live in model/encodings/, one file each.
//
// Shapes follow the legend in positional.h. Queries arrive already multiplied by
// 1/sqrt(D), so the result is the scaled score. An encoding gives its score as terms
// (ScoreTerms); scores() adds them up into a fresh tensor that no backward formula needs
// (attention masks it in place), and the fused attention reads them without doing so.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/model/attention_observer.h"

namespace txl {

// What every layer needs to know about positions for one forward pass.
struct PositionContext {
  int64_t mem_len = 0;  // M
  // same_length (positional.h, attention_mask): each query sees at most this many of the
  // most recent keys, itself included (0 = every earlier key).
  int64_t key_window = 0;
  int64_t clamp_len = 0;    // cap on distances (encodings with uses_clamp_len; 0 = none)
  torch::Tensor sinusoids;  // [K, C] relative_sinusoids (relative only; undefined otherwise)
  ExtrapolationAid aid = ExtrapolationAid::kNone;  // evaluation only (encodings.h)
  double aid_scale = 1.0;                          // s >= 1 for this pass
  int64_t train_len = 0;                           // L: keys per training segment
  int64_t query_block = 0;  // evaluation: queries per attention block (0 = automatic, < 0 = off)
  // Evaluation progress: called after each query block with the fraction (0..1] of this
  // layer's attention work done (work grows with the keys a block sees). May be empty.
  std::function<void(double)> attention_progress;
  // Statistics: given every layer's probabilities when set (attention_observer.h).
  AttentionObserver* observer = nullptr;
  int64_t layer = 0;  // the layer being run (0-based), for the observer
  // Evaluation with memory (memory.h): the key/value projection of this layer's memory rows
  // kept from the pass that made it ([B, M, 2*H*D]; undefined: project the memory rows), and
  // where the layer puts the projection of its segment rows for the next pass (null: nowhere).
  torch::Tensor memory_kv;
  torch::Tensor* segment_kv = nullptr;
};

// Attention in query blocks (evaluation without gradients). A block of queries i0..i0+b-1
// needs, by causality, only the keys 0..M+i0+b-1, and it is itself "the last b queries of
// those keys" with M + i0 positions before it: the convention every PositionScoreImpl
// already follows. So a block is scored by the same scores() call on narrowed tensors (with
// mem_len = M + i0 and the matching tail of the relative sinusoids), and peak memory grows
// with b * K instead of Q * K. Blocks are used when one layer's scores and probabilities
// would pass this many bytes (or when asked for with query_block > 0).
inline constexpr int64_t kScoreBudgetBytes = int64_t{256} << 20;

// The queries per block for a pass (query_len = no blocking).
int64_t attention_query_block(int64_t batch, int64_t heads, int64_t query_len, int64_t key_len,
                              int64_t requested, bool grad);

// The context of the block of `block_len` queries starting at `first` (of a pass whose
// context is `pos`, with key_len keys in all): mem_len and sinusoids narrowed to it.
PositionContext block_context(const PositionContext& pos, int64_t first, int64_t block_len,
                              int64_t key_len);

// An attention logit as the sum of the three kinds of term the encodings are made of:
//   s[b, h, i, j] = query[b, h, i] . key[b, h, j]                 every encoding
//                 + shifted[b, h, i, j + Q-1-i]                   relative encodings
//                 + bias[h, i, j]                                 bias encodings
// `shifted` holds one score per query and distance (column c = distance K-1-c, one spare
// column), so rel_shift is the index j + Q-1-i (positional.h, rel_shift_padded). The fused
// attention (fused_attention.h) reads the terms where they lie; materialize() adds them up.
struct ScoreTerms {
  torch::Tensor query;    // [B, H, Q, D] pre-scaled, content biases added
  torch::Tensor key;      // [B, H, K, D]
  torch::Tensor shifted;  // [B, H, Q, K+1], each [Q, K+1] matrix contiguous; or undefined
  torch::Tensor bias;     // [H, Q, K] (the same for every batch row) or undefined
};

// The terms added up, a fresh tensor (entries j > M + i: garbage, for causal_mask). -> [B, H, Q, K]
torch::Tensor materialize(const ScoreTerms& terms);

class PositionScoreImpl : public torch::nn::Module {
 public:
  // q: [B, H, Q, D] (pre-scaled), k: [B, H, K, D]                     -> the terms of [B, H, Q, K]
  virtual ScoreTerms terms(const torch::Tensor& q, const torch::Tensor& k,
                           const PositionContext& pos) = 0;
  // The scores themselves: materialize(terms(q, k, pos)).                  -> [B, H, Q, K]
  torch::Tensor scores(const torch::Tensor& q, const torch::Tensor& k, const PositionContext& pos);
};

// The content term alone, q . k: encodings whose positions live elsewhere (at the input)
// or nowhere.
class ContentScore : public PositionScoreImpl {
 public:
  ScoreTerms terms(const torch::Tensor& q, const torch::Tensor& k,
                   const PositionContext& pos) override;
};

class PositionInputImpl : public torch::nn::Module {
 public:
  // h: [B, Q, C] scaled token embeddings of the current segment, after M memory positions;
  // may fill `pos` for the layers. The default adds nothing.                 -> [B, Q, C]
  virtual torch::Tensor apply(const torch::Tensor& h, int64_t mem_len, PositionContext& pos);
};

// The parts of config.pos_encoding, from the factory table.
std::shared_ptr<PositionScoreImpl> make_position_score(const ModelConfig& config);
std::shared_ptr<PositionInputImpl> make_position_input(const ModelConfig& config);

}  // namespace txl
