// Position math shared by the encodings: sinusoids, rel_shift and the causal mask.
//
// Shape legend for every model file:
//   B batch (streams)   Q query length (current segment)   M memory length   K = M + Q keys
//   C d_model           H heads                             D d_head          V vocabulary
// Hidden states are batch-first: [B, Q, C]; attention works on [B, H, Q, K].
#pragma once

#include <torch/torch.h>

namespace txl {

// Transformer-XL relative position embeddings for distances K-1, K-2, ..., 0 (largest
// first, one row per key column), each [sin(p * inv_freq), cos(p * inv_freq)] concatenated,
// inv_freq_i = 1 / 10000^(2i / C). clamp_len > 0 caps the distance.          -> [K, C]
torch::Tensor relative_sinusoids(int64_t key_len, int64_t d_model, int64_t clamp_len,
                                 const torch::TensorOptions& options = {});

// Absolute sinusoidal encoding of positions 0..len-1 (Vaswani et al.):
// PE(t, 2i) = sin(t / 10000^(2i/C)), PE(t, 2i+1) = cos(t / 10000^(2i/C)).     -> [L, C]
torch::Tensor absolute_sinusoids(int64_t len, int64_t d_model,
                                 const torch::TensorOptions& options = {});

// Turns x[..., i, c] = score of query i against distance K-1-c into
// out[..., i, j] = score of query i against distance M + i - j, for j <= M + i.
// Entries with j > M + i are garbage: only valid together with causal_mask.
// O(Q*K) memory: pad a zero column, reinterpret as [K+1, Q], drop a row, reinterpret back.
torch::Tensor rel_shift(const torch::Tensor& x);  // [..., Q, K] -> [..., Q, K]

// true where query i (0-based within the segment) must NOT see key j, i.e. j > mem_len + i.
torch::Tensor causal_mask(int64_t query_len, int64_t mem_len,
                          const torch::Device& device = torch::kCPU);  // -> bool [Q, K]

}  // namespace txl
