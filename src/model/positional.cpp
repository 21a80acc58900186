#include "txl/model/positional.h"

namespace txl {

namespace {

// inv_freq_i = 1 / 10000^(2i / C), i = 0..C/2-1                               -> [C/2]
torch::Tensor inverse_frequencies(int64_t d_model, const torch::TensorOptions& options) {
  TORCH_CHECK(d_model % 2 == 0, "sinusoidal encodings need an even d_model, got ", d_model);
  auto exponent = torch::arange(0, d_model, 2, options.dtype(torch::kFloat64)) / double(d_model);
  return torch::pow(10000.0, -exponent);
}

}  // namespace

torch::Tensor relative_sinusoids(int64_t key_len, int64_t d_model, int64_t clamp_len,
                                 const torch::TensorOptions& options) {
  auto positions = torch::arange(key_len - 1, -1, -1, options.dtype(torch::kFloat64));  // [K]
  if (clamp_len > 0) positions = positions.clamp_max(static_cast<double>(clamp_len));
  auto angles = torch::outer(positions, inverse_frequencies(d_model, options));  // [K, C/2]
  auto out = torch::cat({angles.sin(), angles.cos()}, /*dim=*/1);                // [K, C]
  return out.to(options.dtype(torch::kFloat32));
}

torch::Tensor absolute_sinusoids(int64_t len, int64_t d_model,
                                 const torch::TensorOptions& options) {
  auto positions = torch::arange(len, options.dtype(torch::kFloat64));           // [L]
  auto angles = torch::outer(positions, inverse_frequencies(d_model, options));  // [L, C/2]
  auto out = torch::stack({angles.sin(), angles.cos()}, /*dim=*/2).reshape({len, d_model});
  return out.to(options.dtype(torch::kFloat32));  // [L, C]
}

torch::Tensor rel_shift(const torch::Tensor& x) {
  return rel_shift_padded(torch::constant_pad_nd(x, {0, 1}));  // [..., Q, K+1] -> [..., Q, K]
}

torch::Tensor rel_shift_padded(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() >= 2 && x.size(-1) >= 2, "rel_shift_padded needs [..., Q, K+1], got ",
              x.sizes());
  const int64_t q = x.size(-2);
  const int64_t k = x.size(-1) - 1;
  TORCH_CHECK(x.stride(-1) == 1 && (q == 1 || x.stride(-2) == k + 1),
              "rel_shift_padded needs contiguous [Q, K+1] matrices, got strides ", x.strides());
  auto sizes = x.sizes().vec();
  auto strides = x.strides().vec();
  sizes.back() = k;
  strides[strides.size() - 2] = k;                                    // rows K apart, not K+1
  return x.as_strided(sizes, strides, x.storage_offset() + (q - 1));  // [..., Q, K] (a view)
}

torch::Tensor causal_mask(int64_t query_len, int64_t mem_len, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({query_len, query_len + mem_len}, opts).triu(1 + mem_len);  // [Q, K]
}

bool window_cuts(int64_t query_len, int64_t mem_len, int64_t key_window) {
  return key_window > 0 && query_len + mem_len > key_window;
}

torch::Tensor attention_mask(int64_t query_len, int64_t mem_len, int64_t key_window,
                             const torch::Device& device) {
  auto mask = causal_mask(query_len, mem_len, device);  // [Q, K]
  if (!window_cuts(query_len, mem_len, key_window)) return mask;
  // Key j is older than the window of query i when j <= M + i - key_window.
  auto opts = torch::TensorOptions().dtype(torch::kBool).device(device);
  auto old = torch::ones({query_len, query_len + mem_len}, opts).tril(mem_len - key_window);
  return mask.logical_or_(old);  // [Q, K]
}

}  // namespace txl
