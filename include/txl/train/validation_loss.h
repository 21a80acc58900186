// Validation during training: the run's own protocol (memory with the training streams for
// encodings with memory, non-overlapping windows otherwise) at the training length.
#pragma once

#include <cstdint>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/evaluate.h"
#include "txl/model/transformer.h"

namespace txl {

class Distributed;

// Data-parallel (dist.active()): each rank scores its shard of the windows (or memory streams)
// and the NLL and token sums are added up, so every rank gets the one-process totals (the
// per-window lists hold only this rank's shard).
EvalResult validation_loss(TransformerLM& model, const std::vector<int32_t>& valid,
                           const Config& config, Distributed& dist);

}  // namespace txl
