// relative's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in relative.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits relative_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kRelative, "relative",
                     "(q+u).k + (q+v).W_r R[i-j]: Transformer-XL sinusoids R, projected per layer");
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.layer_parameters = [](const ModelConfig& c) {
    return 2 * hd(c) + static_cast<double>(c.d_model) * hd(c);  // u, v and W_r
  };
  t.cost = [](const ModelConfig& c, double b, double q, double k) {
    // (q + v).r_k against one key per distance; W_r R once per pass, R a constant.
    return PositionCost{hd(c) * k, k * static_cast<double>(c.d_model) * hd(c) / (b * q), 4.0};
  };
  return t;
}

}  // namespace txl
