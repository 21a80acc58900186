// What `txl train --resume` may change, and the check that a checkpoint continues this
// very run (same configuration up to those keys, same vocabulary, same training tokens).
#pragma once

#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/model/memory.h"
#include "txl/run/run_dir.h"
#include "txl/run/train_state.h"

namespace txl {

// Config keys that `txl train --resume` may change (--set or --config): they affect neither
// the model nor the data nor the optimisation of the steps already taken. train.max_steps
// extends (or shortens) the run and with it the cosine schedule of the remaining steps;
// data.dir may move because the training split is verified by its fingerprint instead.
const std::vector<std::string>& resumable_keys();

// The command that continues the run in `run_dir`, trained by `world_size` processes, as
// txl prints it after a stop: "txl train --resume DIR" with "--nproc N" when N > 1 (a
// resume needs as many processes as the checkpoint holds streams for) and the directory
// quoted for the shell.
std::string resume_command(const std::string& run_dir, int world_size);

// InputError naming the checkpoint and the command that resumes it when the checkpoint was
// trained by `saved` processes and this resume has `now`.
void check_resume_world(int64_t saved, int64_t now, const RunPaths& paths);

// InputError naming the checkpoint and the difference when `saved` (from the checkpoint)
// and `now` (this run) differ in anything but resumable_keys().
void check_resume_matches(const TrainState& saved, const TrainState& now, const RunPaths& paths);

// A new run saves its vocabulary (from the training split only) and config.json; a resume
// must find the same vocabulary in the run directory (InputError otherwise).
void save_or_check_vocab(const Config& config, const std::string& run_dir, bool resume,
                         const Vocab& vocab);

// The memory a checkpoint carries must fit the configuration: n_layer tensors [B, M, C].
void check_resumed_memory(const Memory& memory, const Config& config, const std::string& ckpt);

}  // namespace txl
