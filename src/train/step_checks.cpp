#include "txl/train/step_checks.h"

namespace txl {

void clear_gradients(const std::vector<torch::Tensor>& parameters) {
  for (auto p : parameters) p.mutable_grad().reset();
}

bool all_finite(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (t.defined() && !torch::isfinite(t).all().item<bool>()) return false;
  }
  return true;
}

}  // namespace txl
