// The `txl eval` workflow as a library call: load a run, check every requested length
// (the request itself, then that it fits in memory) before the first is evaluated, and
// evaluate each through the run's cache into an EvalReport (report.h) that the command
// prints and writes as JSON. A refusal is an InputError and writes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/data/tokenizer.h"
#include "txl/eval/report.h"
#include "txl/eval/request.h"

namespace txl {

struct RunEvalOptions : EvalPlan {
  std::string run_dir;
};

struct RunEvalOutcome {
  EvalReport report;
  EncodeStats stats;  // tokens of the split scored as <unk>
};

// Prints one line per evaluated length on stderr (and progress for long ones).
RunEvalOutcome evaluate_run(const RunEvalOptions& options);

}  // namespace txl
