// Running the requested probes on one run, and their outputs as text and JSON: what
// `txl eval --probes`, `txl compare --probes` and a study's cells share.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/probe/probe.h"

namespace txl {

// A probe with the values it will run with on one subject.
struct PlannedProbe {
  const Probe* probe = nullptr;
  ProbeValues values;
  double tokens = 0;   // tokens it will forward (ProbeWorkload::tokens)
  int64_t window = 0;  // its longest window (ProbeWorkload::window): timed before it runs
};

// Every requested probe resolved and checked on the subject (InputError naming `where` and
// the option), before any of them runs.
std::vector<PlannedProbe> plan_probes(const ProbeRequest& request, const ProbeSubject& subject,
                                      const std::string& where);

struct ProbeOutput {
  std::string name;
  ProbeValues values;
  ProbeRun run;
  double seconds = 0.0;
};

// One probe's part scored by one shard (Probe::score): what a shard file holds of it.
struct ProbePartial {
  std::string name;
  ProbeValues values;
  nlohmann::json partial;
  double seconds = 0.0;
};

// Scores shard `shard` of each planned probe (the model in eval mode, no gradients), printing
// its cost and progress on stderr prefixed with `label`.
std::vector<ProbePartial> score_probes(const std::vector<PlannedProbe>& planned,
                                       const ProbeSubject& subject, const std::string& label,
                                       const ProbeShard& shard);

// A probe's output from its shards' partials in shard order (one process: its one partial):
// the probe's finish, then for a group probe (RECL) the run's own group-of-one metrics marked
// "[this run alone]". `seconds`: the scoring's (a merge: the shards' sum).
ProbeOutput finish_probe(const std::string& name, const ProbeValues& values,
                         const std::vector<nlohmann::json>& partials, double seconds);

// Runs each planned probe in this process: score_probes of shard 0 of 1, then finish_probe,
// the same code a merge of shards goes through.
std::vector<ProbeOutput> run_probes(const std::vector<PlannedProbe>& planned,
                                    const ProbeSubject& subject, const std::string& label);

// {"<name>": {"options": {...}, "seconds", "metrics": [...], "detail": {...}}, ...}
nlohmann::json probes_to_json(const std::vector<ProbeOutput>& outputs);

// Each probe's metrics as a table, with its options and seed.
std::string format_probe_outputs(const std::vector<ProbeOutput>& outputs);

// The metrics a group probe (RECL) gives each member, from the members' outputs of that
// probe (same order); empty for a probe of one model.
std::vector<std::vector<ProbeMetric>> group_metrics(const Probe& probe,
                                                    const std::vector<const ProbeOutput*>& members);

// Several runs' outputs of the same probes side by side (txl compare): per probe, one row per
// (series, x) and one column per run; a group probe (RECL) is computed over the runs as
// its group, each run's column holding its group metrics. `outputs[r]` is run r's.
struct ProbeComparison {
  std::vector<std::string> runs;
  std::vector<std::string> probes;
  std::vector<std::vector<std::vector<ProbeMetric>>> metrics;  // [probe][run]
};
ProbeComparison compare_probe_outputs(const std::vector<std::string>& run_names,
                                      const std::vector<std::vector<ProbeOutput>>& outputs);
std::string format_probe_comparison(const ProbeComparison& comparison);
nlohmann::json to_json(const ProbeComparison& comparison);

}  // namespace txl
