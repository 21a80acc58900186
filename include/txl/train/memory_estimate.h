// What a training run will need in memory, from its configuration alone, so that a model
// too big for the machine is refused (exit 2) before anything is allocated or written.
#pragma once

#include <cstdint>

#include "txl/config/config.h"

namespace txl {

// Doubles: a mistyped configuration (model.n_layer = 100000) must give a large number, not
// an overflowed one.
struct MemoryEstimate {
  double parameters = 0;        // exactly what count_parameters gives for the built model
  double weight_bytes = 0;      // fp32 weights
  double gradient_bytes = 0;    // one fp32 gradient per weight
  double optimizer_bytes = 0;   // AdamW's two fp32 moments per weight
  double activation_bytes = 0;  // what one training step keeps for backward (a lower bound)
  // Of the total, what grows with the vocabulary: the embedding and output layer (weights,
  // gradients, AdamW state) and the output's logits. Named in a refusal, with adaptive
  // softmax among the hints when it is most of the total and the run has none.
  double vocabulary_bytes = 0;
  int64_t vocab_size = 0;
  bool adaptive = false;
  double total_bytes() const;
};

// The parameters of TransformerLM(config, vocab_size), counted from the shapes it builds.
double parameter_count(const ModelConfig& config, int64_t vocab_size);

// `segment_len`: the tokens per training segment (train.tgt_len once it fits the streams).
MemoryEstimate estimate_training_memory(const Config& config, int64_t vocab_size,
                                        int64_t segment_len);

// InputError naming the estimate and the available memory (both in GB) when the estimate
// exceeds `available_bytes`; a zero `available_bytes` (unknown) checks nothing.
void check_training_memory(const MemoryEstimate& estimate, double available_bytes);

}  // namespace txl
