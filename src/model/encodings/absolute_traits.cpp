// absolute's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in absolute.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits absolute_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kAbsolute, "absolute",
                     "q.k; sinusoids PE(t) added to the token embeddings (Vaswani et al.)");
  return t;
}

}  // namespace txl
