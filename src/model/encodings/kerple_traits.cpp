// kerple's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in kerple.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits kerple_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kKerple, "kerple",
                     "q.k - r1_h log(1 + r2_h (i-j)): r1, r2 > 0 learned per head (KERPLE, log)");
  t.takes_memory = true;
  t.uses_clamp_len = true;
  t.layer_parameters = [](const ModelConfig& c) { return 2.0 * static_cast<double>(c.n_head); };
  return t;
}

}  // namespace txl
