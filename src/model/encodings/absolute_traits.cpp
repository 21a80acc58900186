// absolute's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in absolute.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits absolute_traits() {
  EncodingTraits t{};
  t.id = PosEncoding::kAbsolute;
  t.name = "absolute";
  t.formula = "q.k; sinusoids PE(t) added to the token embeddings (Vaswani et al.)";
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

}  // namespace txl
