#include "txl/model/encodings/absolute.h"

#include "txl/model/encoding_factory.h"
#include "txl/model/positional.h"

namespace txl {

torch::Tensor AbsoluteSinusoidInput::apply(const torch::Tensor& h, int64_t /*mem_len*/,
                                           PositionContext& /*pos*/) {
  return h + absolute_sinusoids(h.size(1), d_model_,
                                torch::TensorOptions().device(h.device()));  // [B, Q, C]
}

// How model.pos_encoding "absolute" is built (encoding_factory.h).
EncodingFactory absolute_factory() {
  return {content_score,
          [](const ModelConfig& c) { return std::make_shared<AbsoluteSinusoidInput>(c.d_model); }};
}

}  // namespace txl
