// Segment-level recurrence: the hidden states each layer saw in earlier segments.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace txl {

// layers[l] holds the *input* of layer l (layer 0: the embedding output) for the last
// length() positions of each stream, detached from the graph.          each [B, M, C]
//
// Evaluation also keeps each layer's key/value projection of those rows, made when they were
// the current segment, so that the next segment does not project its memory again
// (Transformer-XL's "cache"; training recomputes it, since the weights move between steps).
// A projection belongs to layers[l] only while projected_from[l] is that very tensor:
// update_memory sets the pair, and any other edit of `layers` (fewer streams, a loaded
// checkpoint) makes new tensors and so drops it. Tensors are never edited in place.
struct Memory {
  std::vector<torch::Tensor> layers;
  std::vector<torch::Tensor> projected;       // [B, M, 2*H*D]: keys then values; may be undefined
  std::vector<torch::Tensor> projected_from;  // the layers[l] each projection was made for

  bool empty() const { return layers.empty(); }
  int64_t length() const { return layers.empty() ? 0 : layers.front().size(1); }
  // The kept projection of layers[l], or an undefined tensor when there is none for it.
  torch::Tensor projection(size_t l) const;
};

// new_mem[l] = cat(old[l], layer_inputs[l])[-keep:], detached. keep = 0 gives no memory.
// segment_kv[l] (optional, [B, Q, 2*H*D]) is layer l's key/value projection of
// layer_inputs[l]; the new memory keeps the projection of its rows where every kept row has
// one (the old rows' from old.projection(l)).
Memory update_memory(const Memory& old, const std::vector<torch::Tensor>& layer_inputs,
                     int64_t keep, const std::vector<torch::Tensor>& segment_kv = {});

// The memory of the last `streams` streams (all of them when there are no more): the rows
// narrowed along the batch, each kept projection with its rows (it stays valid).
Memory last_streams(const Memory& memory, int64_t streams);

}  // namespace txl
