// Validation during training: the run's own protocol (memory with the training streams for
// encodings with memory, non-overlapping windows otherwise) at the training length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/evaluate.h"
#include "txl/model/transformer.h"

namespace txl {

class Distributed;

// Data-parallel (dist.active()): each rank scores its shard of the windows (or memory streams)
// and the NLL and token sums are added up, so every rank gets the one-process totals (the
// per-window lists hold only this rank's shard). `label` ("valid @ step 400"), where given,
// names the progress lines a validation longer than `progress_seconds` prints on stderr,
// one at most that often (the root rank's: its shard's progress; the final validation of a
// 260,074-token split took 485 s in silence).
inline constexpr double kValidationProgressSeconds = 5.0;
EvalResult validation_loss(TransformerLM& model, const std::vector<int32_t>& valid,
                           const Config& config, Distributed& dist, const std::string& label = "",
                           double progress_seconds = kValidationProgressSeconds);

// The tokens a validation of `valid_tokens` tokens scores on one of `shards` ranks, about:
// eval_max_tokens (0: all) of them, shared out.
int64_t validation_tokens(int64_t valid_tokens, const Config& config, int64_t shards);

}  // namespace txl
