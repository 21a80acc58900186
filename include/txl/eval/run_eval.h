// The `txl eval` workflow as a library call: load a run, check every requested length
// (the request itself, then that it fits in memory) before the first is evaluated, and
// evaluate each through the run's cache into an EvalReport (report.h) that the command
// prints and writes as JSON. A refusal is an InputError and writes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "txl/data/tokenizer.h"
#include "txl/eval/report.h"
#include "txl/eval/request.h"
#include "txl/run/run_dir.h"

namespace txl {

// What a higher layer (the probes) does with the same loaded run and split: `check` runs
// with the evaluation's own checks, before anything is evaluated or written; `run` after
// the lengths are evaluated. Either may be empty.
struct LoadedEval {
  LoadedRun& run;
  const std::vector<int32_t>& ids;      // the split
  const std::vector<int64_t>& lengths;  // resolved (the run's eval.lengths by default)
};
struct RunEvalExtension {
  std::function<void(const LoadedEval&)> check;
  std::function<void(const LoadedEval&)> run;
};

struct RunEvalOptions : EvalPlan {
  std::string run_dir;
  RunEvalExtension extension;
};

struct RunEvalOutcome {
  EvalReport report;
  EncodeStats stats;  // tokens of the split scored as <unk>
};

// Prints one line per evaluated length on stderr (and progress for long ones).
RunEvalOutcome evaluate_run(const RunEvalOptions& options);

// The run and split loaded as evaluate_run loads them, and the extension's check and run
// called, with no length evaluated: the probes alone (txl eval --shard).
void run_extension_alone(const RunEvalOptions& options);

}  // namespace txl
