// nope's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in nope.cpp (the content score alone).
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits nope_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kNope, "nope",
                     "q.k: no position information beyond the causal mask (Kazemnejad et al.)");
  t.takes_memory = true;
  return t;
}

}  // namespace txl
