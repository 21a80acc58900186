// nope's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in nope.cpp (the content score alone).
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits nope_traits() {
  EncodingTraits t{};
  t.id = PosEncoding::kNope;
  t.name = "nope";
  t.formula = "q.k: no position information beyond the causal mask (Kazemnejad et al.)";
  t.takes_memory = true;
  t.layer_parameters = none;
  t.model_parameters = none;
  t.cost = no_cost;
  return t;
}

}  // namespace txl
