// A model's size from its configuration alone, before it is built: what a memory check asks
// (train's footprint estimate, import's check) and what count_parameters gives once it is.
#pragma once

#include <cstdint>

#include "txl/config/config.h"

namespace txl {

// The parameters of TransformerLM(config, vocab_size), counted from the shapes it builds.
// Doubles: a mistyped configuration (model.n_layer = 100000) gives a large number, not an
// overflowed one.
double parameter_count(const ModelConfig& config, int64_t vocab_size);

// Of them, the embedding, the output layer's own weights and its bias: one [V, C] table (and a
// second untied) for the full softmax; with model.adaptive the shapes adaptive_softmax.h lists.
double input_output_parameters(const ModelConfig& config, int64_t vocab_size);

// Floats of one row's scores while the NLL is computed: V for the full softmax, the head and
// the widest tail for adaptive softmax (OutputHead::row_width of the built model).
int64_t output_row_width(const ModelConfig& config, int64_t vocab_size);

// Floats of the output layer's logits for `tokens` rows. Full softmax: [tokens, V]. Adaptive:
// the head [tokens, c_1 + n] for every row plus each tail's [N_i, n_i] for the N_i rows whose
// target lies in it; without the corpus' counts, sum_i N_i n_i is bounded by tokens * max_i n_i
// (every row in the widest tail), so this is an upper bound.
double output_logit_floats(const ModelConfig& config, int64_t vocab_size, double tokens);

}  // namespace txl
