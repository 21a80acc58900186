// relative_learned's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in relative.cpp (LearnedRelativeScore).
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits relative_learned_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kRelativeLearned, "relative_learned",
                     "(q+u).k + (q+v).P_h T[clamp(i-j)]: a learned table of distances (the seed)");
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.uses_max_rel_dist = true;
  t.layer_parameters = [](const ModelConfig& c) {
    const double D = static_cast<double>(c.d_head), H = static_cast<double>(c.n_head);
    // u, v, the distance table and one D x D projection per head.
    return 2 * hd(c) + (2 * static_cast<double>(c.max_rel_dist) - 1) * D + H * D * D;
  };
  t.cost = [](const ModelConfig& c, double b, double q, double k) {
    const double D = static_cast<double>(c.d_head);
    return PositionCost{hd(c) * k, hd(c) * k * D / (b * q), 6.0};  // the table is learned
  };
  return t;
}

}  // namespace txl
