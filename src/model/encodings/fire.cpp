#include "txl/model/encodings/fire.h"

#include <algorithm>

#include "txl/model/encoding_factory.h"

namespace txl {

FireScore::FireScore(int64_t n_head, double init_threshold, double init_std) {
  fc1 = register_module("fc1", torch::nn::Linear(1, kFireHidden));
  fc2 = register_module("fc2", torch::nn::Linear(kFireHidden, n_head));
  c = register_parameter("c", torch::full({1}, 0.1));
  threshold = register_parameter("threshold", torch::full({1}, init_threshold));
  torch::NoGradGuard no_grad;
  fc2->weight.normal_(0.0, init_std);
  fc2->bias.zero_();
}

torch::Tensor FireScore::normalized_distance(const torch::Tensor& n, const torch::Tensor& p) const {
  auto cc = c.abs();
  auto psi_n = torch::log1p(cc * n);                                   // [Q, K]
  auto psi_p = torch::log1p(cc * torch::maximum(threshold.abs(), p));  // [Q, 1]
  return psi_n / psi_p;                                                // [Q, K]
}

torch::Tensor FireScore::bias(int64_t query_len, const PositionContext& pos,
                              const torch::Device& device) {
  auto n = query_key_distances(query_len, pos.mem_len, /*clamp_len=*/0, device)
               .to(torch::kFloat32);  // [Q, K]
  auto p = torch::arange(pos.mem_len, pos.mem_len + query_len,
                         torch::TensorOptions().dtype(torch::kFloat32).device(device))
               .unsqueeze(1);                         // [Q, 1]
  auto mlp = [&](const torch::Tensor& x) {            // [R, K] -> [H, R, K]
    auto hidden = torch::relu(fc1(x.unsqueeze(-1)));  // [R, K, 32]
    return fc2(hidden).permute({2, 0, 1});            // [H, R, K]
  };
  if (torch::GradMode::is_enabled()) return mlp(normalized_distance(n, p));
  // Evaluation: the hidden layer is 32/H times the bias; rows in chunks keep every tensor at
  // most the size of the bias itself (long windows).
  auto out = torch::empty({fc2->weight.size(0), query_len, n.size(1)}, n.options());  // [H, Q, K]
  const int64_t rows = std::max<int64_t>(1, query_len * fc2->weight.size(0) / kFireHidden);
  for (int64_t r = 0; r < query_len; r += rows) {
    const int64_t len = std::min(rows, query_len - r);
    out.narrow(1, r, len).copy_(mlp(normalized_distance(n.narrow(0, r, len), p.narrow(0, r, len))));
  }
  return out;
}

// How model.pos_encoding "fire" is built (encoding_factory.h).
EncodingFactory fire_factory() {
  return {[](const ModelConfig& c) {
            return std::make_shared<FireScore>(c.n_head, encoding_option(c, "fire_threshold"),
                                               c.init_std);
          },
          nullptr};
}

}  // namespace txl
