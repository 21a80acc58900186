#include "txl/model/memory.h"

namespace txl {

Memory update_memory(const Memory& old, const std::vector<torch::Tensor>& layer_inputs,
                     int64_t keep) {
  Memory next;
  if (keep <= 0) return next;
  TORCH_CHECK(old.empty() || old.layers.size() == layer_inputs.size(),
              "memory has ", old.layers.size(), " layers, expected ", layer_inputs.size());
  torch::NoGradGuard no_grad;
  next.layers.reserve(layer_inputs.size());
  for (size_t l = 0; l < layer_inputs.size(); ++l) {
    auto h = layer_inputs[l].detach();                                     // [B, Q, C]
    auto all = old.empty() ? h : torch::cat({old.layers[l], h}, /*dim=*/1);  // [B, M+Q, C]
    const int64_t total = all.size(1);
    const int64_t start = std::max<int64_t>(0, total - keep);
    next.layers.push_back(all.narrow(1, start, total - start).contiguous());  // [B, <=keep, C]
  }
  return next;
}

}  // namespace txl
