// The training loop: AdamW, linear warm-up then cosine decay, gradient clipping, periodic
// validation, best and last checkpoints, metrics.jsonl and fixed-width progress lines.
//
// Exact resume: a checkpoint holds everything the next step depends on (weights, AdamW
// moments and step counts, param-group options, the training memory, the CPU generator
// state that drives dropout, the stream position, the progress-interval sums), so in fp32 with
// the same thread count a run stopped at step k and resumed logs bit-for-bit the losses of the
// uninterrupted run. Validation saves and restores the generator, so evaluating at step k
// (as a run with max_steps = k does) does not shift the random stream.
//
// Numerical faults: a step whose loss or gradient norm is NaN/Inf is not applied. By default
// training stops with an error naming the step, after saving the state as of the previous
// step (all finite) to checkpoint.pt, so the run can be resumed, e.g. with
// --set train.skip_nonfinite=true. With train.skip_nonfinite the step is skipped and counted
// (metrics.jsonl, checkpoint meta); more than kMaxConsecutiveSkips in a row stops as above.
//
// Testing hooks (environment variables; tests use them to exercise the fault paths
// deterministically, they have no other use):
//   TXL_INJECT_NAN_AT_STEP=3 (or a list, "3,7") multiplies the loss of those steps (1-based)
//     by NaN, which makes loss and gradients NaN;
//   TXL_INJECT_STOP_AT_STEP=k acts as if SIGINT arrived during step k: checkpoint after it,
//     exit 130;
//   TXL_INJECT_KILL_AT_STEP=k kills the process with SIGKILL before step k (what kill -9
//     does: nothing saved since the last checkpoint); with TXL_INJECT_KILL_RANK=r only
//     data-parallel rank r dies.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/corpus.h"
#include "txl/train/distributed.h"
#include "txl/train/init_from.h"

namespace txl {

inline constexpr int64_t kMaxConsecutiveSkips = 20;

class Distributed;

struct TrainOptions {
  std::string run_dir;
  bool resume = false;                            // continue from run_dir/checkpoint.pt
  const std::atomic<int>* stop_signal = nullptr;  // non-zero: checkpoint and stop after this step
  // Data-parallel training (distributed.h); single_process() when this process trains alone
  // (never null). With W ranks each takes
  // batch_size / W contiguous streams of the global batch and their memory; gradients are
  // averaged, so the update is the one-process update of the whole batch. Rank 0 alone writes
  // the run directory (checkpoints with every rank's memory, metrics, logs); validation is
  // sharded (each rank scores a block of the windows or streams, the NLL and token sums are
  // added up, so the result is one process's). Dropout draws from a
  // generator seeded per (train.seed, step, rank), so resuming needs no generator states.
  Distributed* dist = &single_process();
  // A new run's first weights (txl train --init-from, init_from.h), or null: drawn from
  // train.seed. Training takes them over and releases the source's model.
  std::shared_ptr<InitSource> init;
};

struct TrainSummary {
  int64_t steps = 0;       // optimizer steps done in total
  double last_loss = 0.0;  // mean training loss of the last log interval
  double best_valid_ppl = 0.0;
  double train_tokens_per_s = 0.0;
  int64_t skipped_steps = 0;  // non-finite steps skipped in total (train.skip_nonfinite)
  bool interrupted = false;
  int stop_signal = 0;  // the signal that interrupted it (SIGINT for the test hook)
};

// The corpus a run trains on (vocabulary from the training split only), after every check
// that needs the data but no run directory: the training streams hold a whole segment
// (check_training_streams) and the estimated memory fits the machine
// (estimate_training_footprint). InputError otherwise; call it before making the run directory,
// so that bad input leaves nothing behind. What it adds to the token cache goes into `writes`
// when given (the caller commits it once its own checks passed), else is written when every
// check here has passed: a refusal leaves the cache as it was too. With `vocab` (a
// fine-tuned run's: init_from.h) the corpus is read with it instead of building one. The
// memory check is one process's: with `world_size` processes, its share of the streams.
Corpus load_training_data(const Config& config, TokenCacheWrites* writes = nullptr,
                          const Vocab* vocab = nullptr, int world_size = 1);

// Runs training for a validated config on `corpus` (from load_training_data); the run
// directory must already be prepared. On resume, a checkpoint whose config (other than
// resumable_keys()), vocabulary or training split differs from this run's throws InputError
// naming the file and the difference.
TrainSummary train_model(const Config& config, const TrainOptions& options, Corpus corpus);

}  // namespace txl
