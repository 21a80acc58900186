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
// O(Q*K) memory: pads one column (a copy of x), then rel_shift_padded (a view).
torch::Tensor rel_shift(const torch::Tensor& x);  // [..., Q, K] -> [..., Q, K]

// rel_shift without the copy, for scores computed straight into a buffer with one spare
// column: x[..., i, c] for c < K as above, column K anything. Each [Q, K+1] matrix must be
// contiguous (the leading dimensions may have any strides).
// Why it works: out[i, j] = x[i, j + Q-1-i] (distance M+i-j sits in column Q-1-i+j), whose
// flat index in a row-major [Q, K+1] matrix is (Q-1) + i*K + j: a [Q, K] row-major matrix
// starting at element Q-1. The returned view reads it in place; for j <= M + i it only
// touches columns c < K, so the spare column only ever lands in the garbage entries.
// (The classic form pads on the left, views as [K+1, Q] and drops a row: the same
// addresses, one element later.)                                    [..., Q, K+1] -> [..., Q, K]
torch::Tensor rel_shift_padded(const torch::Tensor& x);

// true where query i (0-based within the segment) must NOT see key j, i.e. j > mem_len + i.
torch::Tensor causal_mask(int64_t query_len, int64_t mem_len,
                          const torch::Device& device = torch::kCPU);  // -> bool [Q, K]

// Transformer-XL's same_length: every query sees at most the key_window most recent keys,
// itself included (key j visible to query i when M + i - key_window < j <= M + i), so that
// with full memory each query attends over the same number of keys instead of the last one
// seeing the most. key_window <= 0: no window (causal_mask). The reference's mask
// triu(ones(Q, K), 1 + M) + tril(ones(Q, K), -s), s = Q - (K - mem_len) when K > mem_len,
// is this one with key_window = mem_len.                                   -> bool [Q, K]
torch::Tensor attention_mask(int64_t query_len, int64_t mem_len, int64_t key_window,
                             const torch::Device& device = torch::kCPU);
// Whether a window of key_window keys hides any key from a pass of Q queries after M memory
// rows (K = Q + M > key_window): otherwise attention_mask is the causal mask.
bool window_cuts(int64_t query_len, int64_t mem_len, int64_t key_window);

}  // namespace txl
