#include "txl/probe/assessment.h"

namespace txl {

ProbeSubject probe_subject(const LoadedEval& loaded, Precision precision) {
  ProbeSubject s;
  s.model = &loaded.run.model;
  s.ids = &loaded.ids;
  s.vocab = &loaded.run.vocab;
  s.config = &loaded.run.config;
  s.lengths = loaded.lengths;
  s.precision = precision;
  return s;
}

RunAssessment assess_run(const RunEvalOptions& options, const ProbeRequest& probes) {
  const Precision precision = options.settings.precision;
  PreparedEval prepared(options);
  std::vector<PlannedProbe> planned;
  if (!probes.names.empty())
    planned = plan_probes(probes, probe_subject(prepared.loaded(), precision), "--probes");
  prepared.commit();
  RunAssessment out;
  out.eval = prepared.evaluate();
  if (!planned.empty())
    out.probes = run_probes(planned, probe_subject(prepared.loaded(), precision), "");
  return out;
}

ComparisonAssessment assess_runs(const CompareOptions& options, const ProbeRequest& probes) {
  const Precision precision = options.settings.precision;
  PreparedComparison prepared(options);
  std::vector<std::vector<PlannedProbe>> planned(prepared.runs());
  for (size_t r = 0; r < prepared.runs() && !probes.names.empty(); ++r) {
    planned[r] = plan_probes(probes, probe_subject(prepared.loaded(r), precision),
                             "--probes (run " + options.runs[r] + ")");
  }
  prepared.commit();
  ComparisonAssessment out;
  out.compare = prepared.evaluate();
  if (probes.names.empty()) return out;
  for (size_t r = 0; r < prepared.runs(); ++r) {
    out.probes.push_back(run_probes(planned[r], probe_subject(prepared.loaded(r), precision),
                                    options.runs[r] + ": "));
  }
  return out;
}

std::vector<ProbeOutput> probe_loaded_run(const LoadedEval& loaded, Precision precision,
                                          const ProbeRequest& probes, const std::string& where,
                                          const std::string& label) {
  if (probes.names.empty()) return {};
  const ProbeSubject subject = probe_subject(loaded, precision);
  return run_probes(plan_probes(probes, subject, where), subject, label);
}

}  // namespace txl
