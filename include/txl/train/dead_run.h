// A run directory left by a run that died before its first checkpoint. A run that fails
// inside txl removes what it wrote (run_training.h); one killed with SIGKILL (the kernel's
// out-of-memory killer) cannot, and leaves config.json, vocab.json and metrics.jsonl without
// a checkpoint. A new `txl train` into that folder is refused (without --force) with what most
// likely happened: when the dead run's own footprint, measured as `txl train` measures it
// (step_footprint.h), takes most of what a process may hold here, the out-of-memory killer.
#pragma once

#include <string>

namespace txl {

// "" when `dir` is not such a folder; otherwise why the run most likely died, in words,
// ending with what to do. `limit_bytes`: what a process may hold here
// (process_ram_limit_bytes; 0 = unknown: no out-of-memory hint).
std::string dead_run_diagnosis(const std::string& dir, double limit_bytes);

// The share of the limit above which a footprint counts as close to it: the measured
// estimate lands at 0.9-1.2 of a run's peak, the corpus the dead run read is not in it (its
// ids are drawn here), and whatever else ran beside it shared the machine.
inline constexpr double kCloseToMemoryShare = 0.5;

}  // namespace txl
