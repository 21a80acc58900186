// Attention as one pass per (batch row, head) on the CPU: the score terms (ScoreTerms,
// position_score.h), the causal mask, the softmax and the product with the values, and its
// own backward. Shapes follow the legend in positional.h.
//
// What it saves against the operator-by-operator path (materialize, masked_fill_, softmax,
// batched_matmul): each head's [Q, K] scores are made, masked, normalised and multiplied
// while they sit in the core's cache, where the other path sends four whole [B, H, Q, K]
// tensors through memory in the forward and six in the backward. rel_shift is an index
// (a strided view of each head's [Q, K+1] position scores), so its backward writes the
// gradient in place instead of filling a zero [B, H, Q, K+1] tensor and scattering into it;
// the softmax (vector_kernels.h) reads only the visible keys of each row, so there is no
// mask to fill, and masked entries get a zero gradient from the softmax backward itself
// (p = 0 there). The forward keeps the probabilities for the backward (what the other path keeps
// too); without gradients it keeps nothing but one head's scores per thread.
#pragma once

#include <torch/torch.h>

#include "txl/model/position_score.h"

namespace txl {

// Whether attention may take the fused path: float32 CPU tensors, and not switched off with
// the environment variable TXL_FUSED_ATTENTION=0 (for comparisons). Other dtypes (bf16
// under autocast) and devices keep the operator path.
bool fused_attention_applies(const torch::Tensor& v);

// softmax over j <= M + i of the terms' logits, times v, with autograd to every term and v.
// terms: [B, H, Q | K, D] (ScoreTerms); v: [B, H, K, D]; mem_len M = K - Q.  -> [B, H, Q, D]
// The result is a [B, H, Q, D] view of [B, Q, H, D] memory (what the output projection reads).
torch::Tensor fused_attention(const ScoreTerms& terms, const torch::Tensor& v, int64_t mem_len);

}  // namespace txl
