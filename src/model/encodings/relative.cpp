#include "txl/model/encodings/relative.h"

#include <algorithm>
#include <cmath>

#include "txl/model/encoding_factory.h"
#include "txl/model/kernels.h"
#include "txl/model/positional.h"
#include "txl/platform/runtime.h"

namespace txl {

RelativeScore::RelativeScore(int64_t n_head, int64_t d_head, double init_std)
    : n_head_(n_head), d_head_(d_head), scale_(1.0 / std::sqrt(static_cast<double>(d_head))) {
  u = register_parameter("u", torch::randn({n_head, d_head}) * init_std);
  v = register_parameter("v", torch::randn({n_head, d_head}) * init_std);
}

ScoreTerms RelativeScore::terms(const torch::Tensor& q, const torch::Tensor& k,
                                const PositionContext& pos) {
  const int64_t key_len = k.size(2);
  // q is pre-scaled by 1/sqrt(D); the biases are too, so score = (q + u).k / sqrt(D).
  auto u_s = (u * scale_).view({1, n_head_, 1, d_head_}).to(q.dtype());
  auto v_s = (v * scale_).view({1, n_head_, 1, d_head_}).to(q.dtype());
  // One zero distance key past the last makes the position scores come out with the spare
  // column rel_shift_padded needs, so the shift is a view instead of two [B, H, Q, K] copies.
  auto r = distance_keys(key_len, pos).to(q.dtype());                       // [H, K, D]
  auto r_pad = torch::constant_pad_nd(r, {0, 0, 0, 1});                     // [H, K+1, D]
  auto bd = batched_matmul(q + v_s, r_pad.transpose(-1, -2).unsqueeze(0));  // [B, H, Q, K+1]
  return {q + u_s, k, bd, {}};
}

SinusoidRelativeScore::SinusoidRelativeScore(int64_t d_model, int64_t n_head, int64_t d_head,
                                             double init_std)
    : RelativeScore(n_head, d_head, init_std) {
  w_r = register_module(
      "w_r", torch::nn::Linear(torch::nn::LinearOptions(d_model, n_head * d_head).bias(false)));
  torch::NoGradGuard no_grad;
  w_r->weight.normal_(0.0, init_std);
}

torch::Tensor SinusoidRelativeScore::distance_keys(int64_t key_len, const PositionContext& pos) {
  TORCH_CHECK(pos.sinusoids.defined() && pos.sinusoids.size(0) == key_len,
              "relative encoding needs sinusoids for ", key_len, " keys");
  auto r = projected_keys(pos.sinusoids);                         // [K, H*D]
  return r.view({key_len, n_head_, d_head_}).permute({1, 0, 2});  // [H, K, D]
}

torch::Tensor SinusoidRelativeScore::projected_keys(const torch::Tensor& sinusoids) {
  const auto& weight = w_r->weight;  // [H*D, C]
  const auto bytes = [&weight](int64_t keys) {
    return keys * weight.size(0) * weight.element_size();
  };
  const int64_t keys = sinusoids.size(0);
  const bool learning = is_training() || torch::GradMode::is_enabled();
  if (learning) kept_.clear();
  if (learning || bytes(keys) > kKeptDistanceKeyBytes) return affine(sinusoids, weight);
  const bool autocast = autocast_enabled(weight.device().type());
  // What another weight (or version) projected is gone for good.
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(),
                             [&](const KeptDistanceKeys& k) {
                               return k.weight_data != weight.data_ptr() ||
                                      k.weight_version != weight._version() ||
                                      k.autocast != autocast;
                             }),
              kept_.end());
  for (const auto& k : kept_) {
    if (k.sinusoids.size(0) == keys && k.sinusoids.dtype() == sinusoids.dtype() &&
        k.sinusoids.device() == sinusoids.device() && torch::equal(k.sinusoids, sinusoids))
      return k.keys;  // [K, H*D]
  }
  int64_t held = bytes(keys);
  for (const auto& k : kept_) held += bytes(k.sinusoids.size(0));
  while (held > kKeptDistanceKeyBytes && !kept_.empty()) {
    held -= bytes(kept_.front().sinusoids.size(0));
    kept_.erase(kept_.begin());
  }
  kept_.push_back(
      {sinusoids, affine(sinusoids, weight), weight.data_ptr(), weight._version(), autocast});
  return kept_.back().keys;  // [K, H*D]
}

RelativeSinusoidInput::RelativeSinusoidInput(int64_t d_model, double dropout)
    : d_model_(d_model), dropout_(dropout) {}

torch::Tensor RelativeSinusoidInput::apply(const torch::Tensor& h, int64_t mem_len,
                                           PositionContext& pos) {
  const int64_t key_len = mem_len + h.size(1);
  pos.sinusoids = apply_dropout(relative_sinusoids(key_len, d_model_, pos.clamp_len,
                                                   torch::TensorOptions().device(h.device())),
                                dropout_, is_training());  // [K, C], computed where h is
  return h;
}

LearnedRelativeScore::LearnedRelativeScore(int64_t n_head, int64_t d_head, int64_t max_dist,
                                           double init_std)
    : RelativeScore(n_head, d_head, init_std), max_rel_dist(max_dist) {
  table = register_parameter("table", torch::randn({2 * max_dist - 1, d_head}) * init_std);
  projection = register_parameter("projection", torch::randn({n_head, d_head, d_head}) * init_std);
}

int64_t LearnedRelativeScore::table_row(int64_t distance) const {
  const int64_t d = std::clamp<int64_t>(distance, -(max_rel_dist - 1), max_rel_dist - 1);
  return d + max_rel_dist - 1;
}

torch::Tensor LearnedRelativeScore::distance_keys(int64_t key_len, const PositionContext& pos) {
  // Distances K-1 .. 0, clamped to the table (and to clamp_len when set).
  auto distances =
      torch::arange(key_len - 1, -1, -1,
                    torch::TensorOptions().dtype(torch::kLong).device(table.device()));  // [K]
  int64_t cap = max_rel_dist - 1;
  if (pos.clamp_len > 0) cap = std::min(cap, pos.clamp_len);
  auto rows = distances.clamp_max(cap) + (max_rel_dist - 1);  // [K]
  auto t = table.index_select(0, rows);                       // [K, D]
  // r[h, k, :] = P_h^T-free convention: r = t @ P_h                         -> [H, K, D]
  return torch::matmul(t.unsqueeze(0), projection);
}

// How model.pos_encoding "relative" and "relative_learned" are built (encoding_factory.h).
EncodingFactory relative_factory() {
  return {[](const ModelConfig& c) {
            return std::make_shared<SinusoidRelativeScore>(c.d_model, c.n_head, c.d_head,
                                                           c.init_std);
          },
          [](const ModelConfig& c) {
            return std::make_shared<RelativeSinusoidInput>(c.d_model, c.dropout);
          }};
}

EncodingFactory relative_learned_factory() {
  return {[](const ModelConfig& c) {
            return std::make_shared<LearnedRelativeScore>(c.n_head, c.d_head, c.max_rel_dist,
                                                          c.init_std);
          },
          nullptr};
}

}  // namespace txl
