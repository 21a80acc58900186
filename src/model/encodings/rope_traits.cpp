// rope's traits (config/encodings.h): what it is and costs, without torch. Built into
// txl_base; the numbers mirror its module in rope.cpp.
#include "txl/config/encoding_traits_helpers.h"

namespace txl {

EncodingTraits rope_traits() {
  EncodingTraits t = encoding_named(
      PosEncoding::kRope, "rope",
      "R(p_i) q . R(p_j) k: pairs (x_j, x_j+D/2) rotated by p * base^(-2j/D) (RoFormer)");
  t.takes_memory = true;
  t.options = {{"rope_base", 10000.0, 2.0, 1e12, false, "rope: base b of theta_j = b^(-2j/D)"}};
  t.aids = {ExtrapolationAid::kPi, ExtrapolationAid::kNtk, ExtrapolationAid::kYarn,
            ExtrapolationAid::kDynamicNtk, ExtrapolationAid::kDynamicYarn};
  // No cost beyond q.k: element-wise rotations of q and k, no multiply-accumulates.
  return t;
}

}  // namespace txl
