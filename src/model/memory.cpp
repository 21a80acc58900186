#include "txl/model/memory.h"

namespace txl {

Memory update_memory(const Memory& old, const std::vector<torch::Tensor>& layer_inputs,
                     int64_t keep) {
  Memory next;
  if (keep <= 0) return next;
  TORCH_CHECK(old.empty() || old.layers.size() == layer_inputs.size(), "memory has ",
              old.layers.size(), " layers, expected ", layer_inputs.size());
  torch::NoGradGuard no_grad;
  next.layers.reserve(layer_inputs.size());
  for (size_t l = 0; l < layer_inputs.size(); ++l) {
    auto h = layer_inputs[l].detach();  // [B, Q, C]
    const int64_t old_len = old.empty() ? 0 : old.layers[l].size(1);
    const int64_t total = old_len + h.size(1);
    const int64_t start = std::max<int64_t>(0, total - keep);
    // Only what is kept is copied: when the segment alone fills the memory (keep <= Q, the
    // usual mem_len = tgt_len) no copy at all is made when h is already contiguous.
    if (start >= old_len) {
      next.layers.push_back(
          h.narrow(1, start - old_len, total - start).contiguous());  // [B, keep, C]
    } else {
      auto kept_old = old.layers[l].narrow(1, start, old_len - start);  // [B, old-start, C]
      next.layers.push_back(torch::cat({kept_old, h}, /*dim=*/1));      // [B, <=keep, C]
    }
  }
  return next;
}

}  // namespace txl
