// Attention by LibTorch's scaled_dot_product_attention (2.1 and later) for the encodings
// whose logit is query . key plus, at most, a bias that takes no gradient: absolute,
// learned_absolute, nope and rope (content only) and alibi (fixed slopes). On a GPU that runs
// the flash and memory-efficient kernels, which never make the [B, H, Q, K] scores. The
// relative encodings' shifted term ((q + v) . W_r R) and the learned biases (t5, kerple,
// fire) stay on txl's own paths. Shapes follow the legend in positional.h.
#pragma once

#include <torch/torch.h>

#include "txl/model/position_score.h"

namespace txl {

// Whether attention takes this path: the LibTorch has the operator, the terms have no
// shifted part and no bias that needs a gradient, the tensors are on a GPU, and the
// environment variable TXL_SDPA is not 0. On the CPU the fused pass (fused_attention.h)
// runs float32 instead, and bf16 keeps the operator path: no LibTorch 2.x CPU measurement
// has shown the operator faster there yet.
bool sdpa_attention_applies(const ScoreTerms& terms, const torch::Tensor& v);

// softmax over j <= M + i of query . key + bias, times v, by scaled_dot_product_attention
// (any device; tests run it on the CPU). terms: [B, H, Q | K, D]; v: [B, H, K, D].
//                                                                          -> [B, H, Q, D]
torch::Tensor sdpa_attention(const ScoreTerms& terms, const torch::Tensor& v, int64_t mem_len);

}  // namespace txl
