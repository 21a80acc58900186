// Attention by LibTorch's scaled_dot_product_attention (2.1 and later). The content part of
// the logit (query . key) goes to the operator as queries and keys; everything else is an
// additive mask: alibi's fixed bias, or, for the encodings whose position part takes a
// gradient (relative, relative_learned: the shifted (q + v) . W_r R term; t5, kerple, fire:
// the learned bias), that part made into a [B, H, Q, K] tensor with the future at -inf, whose
// gradient the operator returns. On a GPU the content-only encodings run the flash kernel,
// which never makes the [B, H, Q, K] scores; with a mask it is the memory-efficient kernel,
// which makes the mask but not the probabilities and their dropout-free copies. Shapes follow
// the legend in positional.h.
#pragma once

#include <torch/torch.h>

#include "txl/model/position_score.h"

namespace txl {

// Whether attention takes this path: the LibTorch has the operator, the tensors are on a GPU,
// and the environment variable TXL_SDPA is not 0 (TXL_SDPA_POSITION=0: only for the encodings
// without a learned position term, as before that took them too). On the CPU the fused pass
// (fused_attention.h) runs float32 instead, and bf16 keeps the operator path: no LibTorch 2.x
// CPU measurement has shown the operator faster there yet.
bool sdpa_attention_applies(const ScoreTerms& terms, const torch::Tensor& v);

// softmax over j <= M + i of the terms' logits, times v, by scaled_dot_product_attention
// (any device; tests run it on the CPU). terms: [B, H, Q | K, D]; v: [B, H, K, D].
//                                                                          -> [B, H, Q, D]
torch::Tensor sdpa_attention(const ScoreTerms& terms, const torch::Tensor& v, int64_t mem_len);

}  // namespace txl
