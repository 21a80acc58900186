#include "txl/model/encodings/learned_absolute.h"

#include "txl/model/encoding_factory.h"

namespace txl {

LearnedAbsoluteInput::LearnedAbsoluteInput(int64_t max_len, int64_t d_model, double init_std) {
  table = register_parameter("table", torch::randn({max_len, d_model}) * init_std);
}

torch::Tensor LearnedAbsoluteInput::rows(int64_t len, const PositionContext& pos) const {
  const int64_t max_len = table.size(0);
  if (pos.aid != ExtrapolationAid::kInterpolate) {
    TORCH_CHECK(len <= max_len, "learned_absolute has ", max_len, " positions, the window has ",
                len, " (use --aid interpolate)");
    return table.narrow(0, 0, len);  // [len, C]
  }
  auto p =
      torch::arange(len, torch::TensorOptions().dtype(torch::kFloat32).device(table.device())) /
      pos.aid_scale;  // [len]
  TORCH_CHECK(len == 0 || p[-1].item<double>() <= static_cast<double>(max_len - 1) + 1e-6,
              "--aid interpolate with factor ", pos.aid_scale, " reads past the ", max_len,
              " positions of learned_absolute");
  auto lo = p.floor().clamp_max(max_len - 1);           // [len]
  auto hi = (lo + 1).clamp_max(max_len - 1);            // [len]
  auto w = (p - lo).unsqueeze(1);                       // [len, 1]
  auto a = table.index_select(0, lo.to(torch::kLong));  // [len, C]
  auto b = table.index_select(0, hi.to(torch::kLong));  // [len, C]
  return a * (1 - w) + b * w;                           // [len, C]
}

torch::Tensor LearnedAbsoluteInput::apply(const torch::Tensor& h, int64_t /*mem_len*/,
                                          PositionContext& pos) {
  return h + rows(h.size(1), pos).to(h.dtype());  // [B, Q, C]
}

// How model.pos_encoding "learned_absolute" is built (encoding_factory.h).
EncodingFactory learned_absolute_factory() {
  return {content_score, [](const ModelConfig& c) {
            return std::make_shared<LearnedAbsoluteInput>(encoding_option_int(c, "max_len"),
                                                          c.d_model, c.init_std);
          }};
}

}  // namespace txl
