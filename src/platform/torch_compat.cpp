#include "txl/platform/torch_compat.h"

namespace txl {

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           bool causal, double scale) {
#if TXL_TORCH_AT_LEAST(2, 1)
  const c10::optional<torch::Tensor> attn_mask =
      mask.defined() ? c10::optional<torch::Tensor>(mask) : c10::nullopt;
  return at::scaled_dot_product_attention(q, k, v, attn_mask, /*dropout_p=*/0.0, causal, scale);
#else
  (void)q, (void)k, (void)v, (void)mask, (void)causal, (void)scale;
  TORCH_CHECK(false, "scaled_dot_product_attention needs LibTorch 2.1 or later, this is ",
              TORCH_VERSION);
  return {};
#endif
}

}  // namespace txl
