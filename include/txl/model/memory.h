// Segment-level recurrence: the hidden states each layer saw in earlier segments.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace txl {

// layers[l] holds the *input* of layer l (layer 0: the embedding output) for the last
// length() positions of each stream, detached from the graph.          each [B, M, C]
struct Memory {
  std::vector<torch::Tensor> layers;

  bool empty() const { return layers.empty(); }
  int64_t length() const { return layers.empty() ? 0 : layers.front().size(1); }
};

// new_mem[l] = cat(old[l], layer_inputs[l])[-keep:], detached. keep = 0 gives no memory.
Memory update_memory(const Memory& old, const std::vector<torch::Tensor>& layer_inputs,
                     int64_t keep);

}  // namespace txl
