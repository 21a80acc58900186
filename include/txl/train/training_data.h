// The corpus a run trains on, with every check that needs the data but no run directory
// (load_training_data in trainer.h is this without the footprint).
#pragma once

#include <cstdint>

#include "txl/config/config.h"
#include "txl/data/corpus.h"
#include "txl/train/footprint_estimate.h"

namespace txl {

// The training streams hold the longest segment training reads (batcher.h,
// check_training_streams), with a refusal that names the key that sets it: train.tgt_len, or
// train.tgt_len_max when segment lengths are drawn. `train_tokens`: the training split's.
void check_segments_fit_streams(int64_t train_tokens, const TrainConfig& train);

// load_training_data, and the footprint of one of its `world_size` processes, measured on the
// corpus and checked against process_ram_limit_bytes() (footprint_estimate.h), into
// `footprint`: what `--nproc N` multiplies by N.
Corpus load_training_data(const Config& config, TokenCacheWrites* writes, const Vocab* vocab,
                          int world_size, TrainingFootprint* footprint);

}  // namespace txl
