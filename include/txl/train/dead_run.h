// A run directory left by a run that died before its first checkpoint. A run that fails
// inside txl removes what it wrote (run_training.h); one killed with SIGKILL (the kernel's
// out-of-memory killer) cannot, and leaves config.json, vocab.json and metrics.jsonl without
// a checkpoint. A new `txl train` into that folder is refused (without --force) with what most
// likely happened: when the dead run's own memory estimate took most of what this machine
// has, the out-of-memory killer.
#pragma once

#include <string>

namespace txl {

// "" when `dir` is not such a folder; otherwise why the run most likely died, in words,
// ending with what to do.
std::string dead_run_diagnosis(const std::string& dir, double available_bytes);

// The share of the available memory above which an estimate counts as close to it: the
// estimate counts what backward certainly keeps, and the allocator and the validation pass
// come on top.
inline constexpr double kCloseToMemoryShare = 0.5;

}  // namespace txl
