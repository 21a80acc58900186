// `txl train --dry-run`: what a configuration would train, from the config and a vocabulary
// size alone, without a run directory: its parameters, FLOPs per token, the memory estimate
// by part (footprint_estimate.h) against what this machine has, and whether it fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/train/bench.h"
#include "txl/train/footprint_estimate.h"

namespace txl {

struct DryRun {
  int64_t vocab_size = 0;
  int64_t segment_len = 0;  // the longest training segment (train.tgt_len or tgt_len_max)
  TrainingFootprint estimate;
  FlopCount flops;
  double limit_bytes = 0;  // what the process may hold at its peak (0: unknown)
  // The process at the peak of reading and tokenizing the corpus (corpus.h,
  // corpus_read_need), and the split read then; 0 and "" when the corpus was not read.
  double read_peak_bytes = 0;
  std::string read_peak;
  bool fits() const {
    return training_footprint_fits(estimate, limit_bytes) &&
           (limit_bytes <= 0 || read_peak_bytes <= limit_bytes);
  }
};

// `train_tokens`: the corpus' training split when it was read (null with --vocab-size): the
// memory estimate measures a step on it (step_footprint.h).
// `limit_bytes`: process_ram_limit_bytes().
DryRun dry_run(const Config& config, int64_t vocab_size, double limit_bytes,
               const std::vector<int32_t>* train_tokens = nullptr);

// The report, one part a line: the model, FLOPs, memory by part, the verdict.
std::string format_dry_run(const DryRun& run, const Config& config);

}  // namespace txl
