// alibi's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in alibi.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits alibi_traits() {
  EncodingTraits t =
      encoding_named(PosEncoding::kAlibi, "alibi",
                     "q.k - m_h (i-j): fixed geometric slopes m_h, no embedding (Press et al.)");
  t.takes_memory = true;
  t.uses_clamp_len = true;
  return t;
}

}  // namespace txl
