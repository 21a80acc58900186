// The training loop: AdamW, linear warm-up then cosine decay, gradient clipping, periodic
// validation, best and last checkpoints, metrics.jsonl and fixed-width progress lines.
#pragma once

#include <atomic>
#include <string>

#include "txl/config/config.h"

namespace txl {

struct TrainOptions {
  std::string run_dir;
  bool resume = false;          // continue from run_dir/checkpoint.pt
  const std::atomic<int>* stop_signal = nullptr;  // non-zero: checkpoint and stop after this step
};

struct TrainSummary {
  int64_t steps = 0;            // optimizer steps done in total
  double last_loss = 0.0;       // mean training loss of the last log interval
  double best_valid_ppl = 0.0;
  double train_tokens_per_s = 0.0;
  bool interrupted = false;
};

// Runs training for a validated config; the run directory must already be prepared.
TrainSummary train_model(const Config& config, const TrainOptions& options);

}  // namespace txl
