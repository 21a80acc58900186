// The `txl compare` workflow as a library call: load the runs, check that they can be
// compared (same vocabulary, same text to score, the method and lengths apply), evaluate
// each through its cache, and return the Comparison (compare.h) that the command prints,
// writes as JSON and plots. Every check comes before any evaluation: a refusal is an
// InputError and writes nothing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "txl/data/tokenizer.h"
#include "txl/eval/compare.h"
#include "txl/eval/plot.h"
#include "txl/eval/request.h"
#include "txl/eval/run_eval.h"

namespace txl {

// One run argument: DIR, DIR@aid or DIR@aid:factor (that run evaluated with that aid, so
// one run can stand in several columns). A path that exists is a run directory as it stands
// (a folder's name may hold '@'); otherwise the text after the '@' of its last component
// must be an aid: an unknown one (runs/rope@bogus, runs/rope@, runs/rope@pi@ntk) is an
// InputError naming it.
struct RunSpec {
  std::string dir;
  std::string suffix;  // "@aid..." as given, appended to the column's name ("" without one)
  EvalSettings settings;
};
RunSpec parse_run_spec(const std::string& arg, const EvalSettings& base);

// The plan's settings hold for every run; a run given as DIR@aid replaces the aid.
// `extension` is called once per run (index r): check before any run is evaluated, run
// after every run's lengths are.
struct CompareOptions : EvalPlan {
  std::vector<std::string> runs;  // parse_run_spec arguments, at least one
  std::function<void(const LoadedEval&, size_t r)> check_run;
  std::function<void(const LoadedEval&, size_t r)> after_run;
};

struct CompareOutcome {
  Comparison comparison;
  EncodeStats stats;  // the first run's split: tokens scored as <unk>
};

// Prints one line per evaluated length on stderr (and progress for long ones).
CompareOutcome compare_runs(const CompareOptions& options);

// Perplexity against length, one series per run with its interval band, the training
// lengths marked.
PlotSpec comparison_plot(const Comparison& c);

}  // namespace txl
