#include "txl/model/encodings/kerple.h"

#include <cmath>

#include "txl/model/encoding_factory.h"

namespace txl {

namespace {

// softplus^-1(1) = log(e - 1): both parameters start at 1.
const double kRawOne = std::log(std::exp(1.0) - 1.0);

}  // namespace

KerpleScore::KerpleScore(int64_t n_head) {
  raw_r1 = register_parameter("raw_r1", torch::full({n_head}, kRawOne));
  raw_r2 = register_parameter("raw_r2", torch::full({n_head}, kRawOne));
}

torch::Tensor KerpleScore::r1() const { return torch::softplus(raw_r1); }
torch::Tensor KerpleScore::r2() const { return torch::softplus(raw_r2); }

torch::Tensor KerpleScore::bias(int64_t query_len, const PositionContext& pos,
                                const torch::Device& device) {
  auto n = query_key_distances(query_len, pos.mem_len, pos.clamp_len, device)
               .to(torch::kFloat32)
               .unsqueeze(0);                               // [1, Q, K]
  auto log_term = torch::log1p(r2().view({-1, 1, 1}) * n);  // [H, Q, K]
  return -r1().view({-1, 1, 1}) * log_term;                 // [H, Q, K]
}

// How model.pos_encoding "kerple" is built (encoding_factory.h).
EncodingFactory kerple_factory() {
  return {[](const ModelConfig& c) { return std::make_shared<KerpleScore>(c.n_head); }, nullptr};
}

}  // namespace txl
