// The `txl train` workflow as library calls: prepare a new run or a resume (every check that
// can fail on the input first, then the run directory made or cleared and locked), then
// train it, removing what a new run wrote when it fails before its first checkpoint.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/corpus.h"
#include "txl/run/run_dir.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/trainer.h"

namespace txl {

struct TrainRequest {
  std::string config_path;             // new run: required; resume: optional, must equal the run's
                                       // config.json but for resumable_keys()
  std::string run_dir;                 // new run: empty = runs/<config name>-<timestamp>
  std::string resume_dir;              // non-empty: continue that run from its checkpoint.pt
  std::vector<std::string> overrides;  // --set key=value (on resume: resumable keys only)
  bool force = false;                  // new run: clear an existing run directory
  // New run: start from this run's weights and vocabulary (init_from.h), from its best.pt
  // (falling back to checkpoint.pt) or, with "last", its checkpoint.pt.
  std::string init_from;
  std::string init_checkpoint = "best";
  // Data-parallel ranks (distributed.h): rank 0 prepares the run directory as one process
  // does; the others only load and check the same config and data (they never write it).
  int rank = 0;
  int world_size = 1;
  // Every check rank 0 makes (the run directory's lock taken and released), and nothing
  // written, made or cleared: what `--nproc N` runs before it starts a rank.
  bool check_only = false;
};

// A run ready to train. The lock is held until this is destroyed.
struct PreparedTraining {
  Config config;
  Corpus corpus;
  TrainingFootprint footprint;  // one process's, measured on the corpus (training_data.h)
  TrainOptions options;         // run_dir and resume; stop_signal is run_training's
  std::unique_ptr<RunLock> lock;
  bool created_dir = false;  // the run directory did not exist before
};

// InputError (nothing written, nothing cleared) for any problem with the request, the
// configuration, the corpus, the run directory or the memory the run needs. Prints the
// "resume: changing ..." lines of a resume.
PreparedTraining prepare_training(const TrainRequest& request);

// What `txl train --nproc N` checks before it starts a rank, so that a launch that cannot
// work is refused (InputError, nothing written) instead of failing in N processes:
// everything prepare_training checks for rank 0 with a world of N (train.batch_size a
// multiple of N, a resume's checkpoint trained by N processes, ...), N at most
// kMaxThreadsPerCore per core unless `oversubscribe`, and N times one process's measured
// footprint within what the machine has (check_training_footprint with N processes).
void check_launch(const TrainRequest& request, int nproc, bool oversubscribe);

// Trains the prepared run (stop_signal: non-zero = checkpoint and stop after this step). A new
// run that throws before its first checkpoint removes what it wrote, so the same command can
// be run again, and rethrows.
TrainSummary run_training(PreparedTraining& run, const std::atomic<int>* stop_signal);

}  // namespace txl
