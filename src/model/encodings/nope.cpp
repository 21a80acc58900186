// nope (Kazemnejad et al.): no position information beyond the causal mask. Its module is
// the content score alone (ContentScore, position_score.h), so this file holds only its
// factory.
#include "txl/model/encoding_factory.h"

namespace txl {

EncodingFactory nope_factory() { return {content_score, nullptr}; }

}  // namespace txl
