// fire's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in fire.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits fire_traits() {
  EncodingTraits t = encoding_named(
      PosEncoding::kFire, "fire",
      "q.k + MLP(psi(i-j) / psi(max(L, i)))_h, psi(x) = log(cx+1), c, L learned (FIRE)");
  t.takes_memory = true;
  t.options = {{"fire_threshold", 512, 1, 1e9, false, "fire: initial value of the threshold L"}};
  t.layer_parameters = [](const ModelConfig& c) {
    const double hidden = 32, H = static_cast<double>(c.n_head);
    return 2 * hidden + hidden * H + H + 2;  // 1 -> 32 -> H MLP with biases, c, L
  };
  t.cost = [](const ModelConfig& c, double b, double /*q*/, double k) {
    const double hidden = 32, H = static_cast<double>(c.n_head);
    // The MLP runs once per (query, key) pair per pass, shared by the batch.
    return PositionCost{0.0, k * (hidden + hidden * H) / b, 6.0};
  };
  return t;
}

}  // namespace txl
