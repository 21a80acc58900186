#include "txl/model/encodings/rope.h"

#include <algorithm>
#include <cmath>

#include "txl/model/encoding_factory.h"
#include "txl/model/kernels.h"

namespace txl {

namespace {

// YaRN's ramp bounds (alpha, beta) from the paper, for LLaMA-family models.
constexpr double kYarnAlpha = 1.0;
constexpr double kYarnBeta = 32.0;

bool is_ntk(ExtrapolationAid aid) {
  return aid == ExtrapolationAid::kNtk || aid == ExtrapolationAid::kDynamicNtk;
}
bool is_yarn(ExtrapolationAid aid) {
  return aid == ExtrapolationAid::kYarn || aid == ExtrapolationAid::kDynamicYarn;
}

}  // namespace

RopeFrequencies rope_frequencies(int64_t d_head, double base, ExtrapolationAid aid, double s,
                                 int64_t train_len) {
  TORCH_CHECK(d_head % 2 == 0, "rope needs an even model.d_head, got ", d_head);
  const double D = static_cast<double>(d_head);
  if (is_ntk(aid)) base *= std::pow(s, D / (D - 2));
  RopeFrequencies f;
  for (int64_t j = 0; j < d_head / 2; ++j) {
    double theta = std::pow(base, -2.0 * static_cast<double>(j) / D);
    if (aid == ExtrapolationAid::kPi) theta /= s;
    if (is_yarn(aid)) {
      const double r = static_cast<double>(train_len) * theta / (2 * M_PI);  // L / wavelength
      const double gamma = std::clamp((r - kYarnAlpha) / (kYarnBeta - kYarnAlpha), 0.0, 1.0);
      theta = (1 - gamma) * theta / s + gamma * theta;
    }
    f.theta.push_back(theta);
  }
  if (is_yarn(aid)) f.temperature = 0.1 * std::log(s) + 1.0;
  return f;
}

torch::Tensor rotate(const torch::Tensor& x, int64_t first, const RopeFrequencies& f) {
  const int64_t len = x.size(-2), half = x.size(-1) / 2;
  auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(x.device());
  auto positions = torch::arange(first, first + len, opts);             // [T]
  auto theta = torch::tensor(f.theta, torch::kFloat64).to(x.device());  // [D/2]
  auto angles = torch::outer(positions, theta).repeat({1, 2});          // [T, D]
  auto cos = (angles.cos() * f.temperature).to(x.dtype());              // [T, D]
  auto sin = (angles.sin() * f.temperature).to(x.dtype());              // [T, D]
  auto halves = x.split(half, -1);                                      // 2 x [..., T, D/2]
  auto rotated_half = torch::cat({-halves[1], halves[0]}, -1);          // [..., T, D]
  return x * cos + rotated_half * sin;                                  // [..., T, D]
}

ScoreTerms RopeScore::terms(const torch::Tensor& q, const torch::Tensor& k,
                            const PositionContext& pos) {
  const RopeFrequencies f = rope_frequencies(d_head_, base_, pos.aid, pos.aid_scale, pos.train_len);
  auto qr = rotate(q, pos.mem_len, f);  // [B, H, Q, D] positions M..K-1
  auto kr = rotate(k, 0, f);            // [B, H, K, D] positions 0..K-1
  return {qr, kr, {}, {}};
}

// How model.pos_encoding "rope" is built (encoding_factory.h).
EncodingFactory rope_factory() {
  return {[](const ModelConfig& c) {
            return std::make_shared<RopeScore>(c.d_head, encoding_option(c, "rope_base"));
          },
          nullptr};
}

}  // namespace txl
