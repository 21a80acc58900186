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
  auto out = torch::cat({angles.sin(), angles.cos()}, /*dim=*/1);               // [K, C]
  return out.to(options.dtype(torch::kFloat32));
}

torch::Tensor absolute_sinusoids(int64_t len, int64_t d_model, const torch::TensorOptions& options) {
  auto positions = torch::arange(len, options.dtype(torch::kFloat64));              // [L]
  auto angles = torch::outer(positions, inverse_frequencies(d_model, options));      // [L, C/2]
  auto out = torch::stack({angles.sin(), angles.cos()}, /*dim=*/2).reshape({len, d_model});
  return out.to(options.dtype(torch::kFloat32));                                     // [L, C]
}

torch::Tensor rel_shift(const torch::Tensor& x) {
  const auto sizes = x.sizes().vec();
  const int64_t q = sizes[sizes.size() - 2];
  const int64_t k = sizes[sizes.size() - 1];
  auto lead = std::vector<int64_t>(sizes.begin(), sizes.end() - 2);
  auto padded = torch::constant_pad_nd(x, {1, 0});                  // [..., Q, K+1]
  auto as_cols = lead;
  as_cols.insert(as_cols.end(), {k + 1, q});
  padded = padded.view(as_cols);                                     // [..., K+1, Q]
  auto dropped = padded.narrow(-2, 1, k);                            // [..., K, Q]
  auto back = lead;
  back.insert(back.end(), {q, k});
  return dropped.reshape(back);                                      // [..., Q, K] (a view)
}

torch::Tensor causal_mask(int64_t query_len, int64_t mem_len, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({query_len, query_len + mem_len}, opts).triu(1 + mem_len);  // [Q, K]
}

}  // namespace txl
