#include "txl/train/grad_clip.h"

#include "txl/platform/multi_tensor.h"
#include "txl/platform/torch_compat.h"

namespace txl {

namespace {

std::vector<torch::Tensor> defined_grads(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

// The global norm as a 0-d tensor on the gradients' device (no synchronisation yet), as
// torch's clip_grad_norm_ takes it: the norm of the per-gradient norms, or the one norm itself.
torch::Tensor global_norm(const std::vector<torch::Tensor>& grads) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;  // [] each
  if (multi_tensor_enabled()) {
    norms = at::_foreach_norm(grads);  // one call for every gradient
  } else {
    norms.reserve(grads.size());
    for (const auto& g : grads) norms.push_back(g.norm());
  }
  return norms.size() == 1 ? norms.front() : torch::stack(norms).norm();
}

}  // namespace

double total_grad_norm(const std::vector<torch::Tensor>& parameters) {
  const auto grads = defined_grads(parameters);
  if (grads.empty()) return 0.0;
  return global_norm(grads).item<double>();
}

double clip_gradients(const std::vector<torch::Tensor>& parameters, double max_norm) {
  TORCH_CHECK(max_norm > 0, "clip_gradients: max_norm must be > 0, got ", max_norm);
  if (!multi_tensor_enabled()) return torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  auto grads = defined_grads(parameters);
  if (grads.empty()) return 0.0;
  torch::NoGradGuard no_grad;
  const torch::Tensor norm = global_norm(grads);                         // []
  const torch::Tensor coef = (max_norm / (norm + 1e-6)).clamp_max(1.0);  // [], as torch's
#if TXL_TORCH_AT_LEAST(2, 1)
  at::_foreach_mul_(grads, coef);  // the coefficient stays on the device
#else
  at::_foreach_mul_(grads, coef.item<double>());  // a float32 value: exact as a double
#endif
  return norm.item<double>();
}

}  // namespace txl
