// Assessing a run: the one workflow `txl eval`, `txl compare` and a study's cells share, and
// the one place the probes are wired into it. The evaluation's phases (eval/run_eval.h,
// eval/compare_runs.h) load the run and split and decide each length; the probes are planned
// (every option checked against the run) before anything is written or evaluated; then the
// protocols run through the cache, then the probes.
#pragma once

#include <string>
#include <vector>

#include "txl/eval/compare_runs.h"
#include "txl/eval/run_eval.h"
#include "txl/probe/run_probes.h"

namespace txl {

// What a probe sees of a loaded run: the model, the split, the evaluated lengths.
ProbeSubject probe_subject(const LoadedEval& loaded, Precision precision);

struct RunAssessment {
  RunEvalOutcome eval;
  std::vector<ProbeOutput> probes;  // in the request's order; empty without probes
};

// txl eval: one run, its lengths, then the probes `probes` names.
RunAssessment assess_run(const RunEvalOptions& options, const ProbeRequest& probes);

struct ComparisonAssessment {
  CompareOutcome compare;
  std::vector<std::vector<ProbeOutput>> probes;  // per run; empty without probes
};

// txl compare: every run's column, then every run's probes.
ComparisonAssessment assess_runs(const CompareOptions& options, const ProbeRequest& probes);

// A study's cell (and anything else that has loaded a run itself): the probes planned, then
// run. `where` names the request in messages ("study.json: eval.probes"), `label` prefixes
// the progress lines.
std::vector<ProbeOutput> probe_loaded_run(const LoadedEval& loaded, Precision precision,
                                          const ProbeRequest& probes, const std::string& where,
                                          const std::string& label);

}  // namespace txl
