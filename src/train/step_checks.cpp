#include "txl/train/step_checks.h"

#include <cstdlib>
#include <string>

#include "txl/util/error.h"
#include "txl/util/parse.h"

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

std::vector<int64_t> injected_steps(const char* name) {
  const char* env = std::getenv(name);
  std::vector<int64_t> steps;
  if (env == nullptr || *env == '\0') return steps;
  if (parse_positive_integers(env, steps)) {
    throw InputError(std::string(name) + "=" + env +
                     ": expected step numbers >= 1 separated by commas");
  }
  return steps;
}

}  // namespace txl
