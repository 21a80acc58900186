#include "txl/model/memory.h"

namespace txl {

namespace {

// The last `keep` rows (dim 1) of cat(old, fresh), copying only what is kept: when the
// fresh rows alone fill the memory (keep <= Q, the usual mem_len = tgt_len) no copy at all
// is made when they are already contiguous. `old` may be undefined when old_len is 0.
torch::Tensor keep_last(const torch::Tensor& old, int64_t old_len, const torch::Tensor& fresh,
                        int64_t keep) {
  const int64_t total = old_len + fresh.size(1);
  const int64_t start = std::max<int64_t>(0, total - keep);
  if (start >= old_len) return fresh.narrow(1, start - old_len, total - start).contiguous();
  return torch::cat({old.narrow(1, start, old_len - start), fresh}, /*dim=*/1);
}

}  // namespace

torch::Tensor Memory::projection(size_t l) const {
  if (l >= projected.size() || l >= projected_from.size() || l >= layers.size()) return {};
  if (!projected[l].defined() || !projected_from[l].is_same(layers[l])) return {};
  return projected[l];
}

Memory update_memory(const Memory& old, const std::vector<torch::Tensor>& layer_inputs,
                     int64_t keep, const std::vector<torch::Tensor>& segment_kv) {
  Memory next;
  if (keep <= 0) return next;
  TORCH_CHECK(old.empty() || old.layers.size() == layer_inputs.size(), "memory has ",
              old.layers.size(), " layers, expected ", layer_inputs.size());
  torch::NoGradGuard no_grad;
  const size_t n = layer_inputs.size();
  next.layers.reserve(n);
  next.projected.resize(n);
  next.projected_from.resize(n);
  for (size_t l = 0; l < n; ++l) {
    const auto h = layer_inputs[l].detach();  // [B, Q, C]
    const int64_t old_len = old.empty() ? 0 : old.layers[l].size(1);
    next.layers.push_back(keep_last(old_len > 0 ? old.layers[l] : torch::Tensor(), old_len, h,
                                    keep));  // [B, <=keep, C]
    if (l >= segment_kv.size() || !segment_kv[l].defined()) continue;
    const auto& kv = segment_kv[l];  // [B, Q, 2*H*D]
    if (kv.size(0) != h.size(0) || kv.size(1) != h.size(1)) continue;
    const bool needs_old = old_len + h.size(1) - keep < old_len;
    const auto old_kv = old_len > 0 ? old.projection(l) : torch::Tensor();
    if (needs_old && old_len > 0 && !old_kv.defined()) continue;
    next.projected[l] = keep_last(old_kv, old_len, kv.detach(), keep);  // [B, <=keep, 2*H*D]
    next.projected_from[l] = next.layers[l];
  }
  return next;
}

Memory last_streams(const Memory& memory, int64_t streams) {
  Memory out = memory;
  for (size_t l = 0; l < out.layers.size(); ++l) {
    auto& layer = out.layers[l];
    if (!layer.defined() || layer.size(0) <= streams) continue;
    const auto kv = memory.projection(l);  // [B, M, 2*H*D] or undefined
    const int64_t first = layer.size(0) - streams;
    layer = layer.narrow(0, first, streams);
    if (!kv.defined()) continue;
    out.projected[l] = kv.narrow(0, first, streams);
    out.projected_from[l] = layer;
  }
  return out;
}

}  // namespace txl
