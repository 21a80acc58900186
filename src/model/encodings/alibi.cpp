#include "txl/model/encodings/alibi.h"

#include <cmath>

#include "txl/model/encoding_factory.h"

namespace txl {

namespace {

std::vector<double> power_of_two_slopes(int64_t n) {
  const double ratio = std::pow(2.0, -8.0 / static_cast<double>(n));
  std::vector<double> out;
  double m = ratio;
  for (int64_t h = 0; h < n; ++h, m *= ratio) out.push_back(m);
  return out;
}

}  // namespace

std::vector<double> alibi_slopes(int64_t n_head) {
  TORCH_CHECK(n_head >= 1, "ALiBi needs at least one head, got ", n_head);
  int64_t c = 1;
  while (c * 2 <= n_head) c *= 2;
  std::vector<double> out = power_of_two_slopes(c);
  if (c == n_head) return out;
  const std::vector<double> doubled = power_of_two_slopes(2 * c);
  for (int64_t h = 0; h < n_head - c; ++h) out.push_back(doubled[2 * h]);
  return out;
}

AlibiScore::AlibiScore(int64_t n_head) {
  slopes = register_buffer("slopes", torch::tensor(alibi_slopes(n_head), torch::kFloat32));
}

torch::Tensor AlibiScore::bias(int64_t query_len, const PositionContext& pos,
                               const torch::Device& device) {
  auto n = query_key_distances(query_len, pos.mem_len, pos.clamp_len, device);  // [Q, K]
  return -slopes.view({-1, 1, 1}) * n.to(torch::kFloat32).unsqueeze(0);         // [H, Q, K]
}

// How model.pos_encoding "alibi" is built (encoding_factory.h).
EncodingFactory alibi_factory() {
  return {[](const ModelConfig& c) { return std::make_shared<AlibiScore>(c.n_head); }, nullptr};
}

}  // namespace txl
