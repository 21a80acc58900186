#include "txl/model/encodings/absolute.h"

#include "txl/model/positional.h"

namespace txl {

torch::Tensor AbsoluteSinusoidInput::apply(const torch::Tensor& h, int64_t /*mem_len*/,
                                           PositionContext& /*pos*/) {
  return h + absolute_sinusoids(h.size(1), d_model_,
                                torch::TensorOptions().device(h.device()));  // [B, Q, C]
}

}  // namespace txl
