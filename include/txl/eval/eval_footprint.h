// The footprint (RAM) one evaluation request will need, from the model's shapes, the request
// and the split's length alone, so that a window too long for the machine is refused
// (exit 2, with the estimate) before anything is allocated, instead of failing in the
// allocator. The weights are already loaded when this is asked, so only what the
// evaluation adds is counted.
#pragma once

#include <cstdint>
#include <string>

#include "txl/config/config.h"
#include "txl/eval/eval_request.h"
#include "txl/model/transformer.h"

namespace txl {

// The largest forward pass a request makes on a split of `targets` scored tokens.
EvalPassShape largest_eval_pass(const EvalRequest& request, int64_t targets);

// Doubles, so that a mistyped length gives a large number, not an overflowed one. Float32
// sizes (bf16 autocast keeps some tensors in float32; the estimate errs high there).
struct EvalFootprint {
  EvalPassShape pass;
  double hidden_bytes = 0;     // each layer's input kept for memory, one layer's temporaries
  double attention_bytes = 0;  // one block of scores and probabilities (position_score.h)
  double output_bytes = 0;     // one block of logits and log-probabilities, the NLL
  double memory_bytes = 0;     // memory carried in and out (method memory)
  double total_bytes() const {
    return hidden_bytes + attention_bytes + output_bytes + memory_bytes;
  }
};

EvalFootprint estimate_eval_footprint(const ModelConfig& model, int64_t vocab_size,
                                      const EvalRequest& request, int64_t targets);

// InputError naming the length, the pass, the estimate and the available memory (in GB)
// when the estimate exceeds `available_bytes`; 0 (unknown) checks nothing.
void check_eval_footprint(const EvalFootprint& estimate, const EvalRequest& request,
                          double available_bytes);

// The tokens of `ids` a request scores: all but the first, at most request.max_tokens.
int64_t scored_targets(const EvalRequest& request, int64_t split_tokens);

// Both of the above against this machine's available memory (platform/resources.h).
void check_eval_fits(const TransformerLM& model, const EvalRequest& request, int64_t split_tokens);

}  // namespace txl
