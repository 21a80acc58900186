// results.json of a study: every cell, every number, the study config, the txl version and
// the statistics method (study_report.h).
#include <nlohmann/json.hpp>

#include "txl/data/tokenizers.h"
#include "txl/eval/interval.h"
#include "txl/eval/report.h"
#include "txl/study/study_bits_per_byte.h"
#include "txl/study/study_report.h"
#include "txl/util/version.h"

namespace txl {

namespace {

using nlohmann::json;

json maybe(bool valid, double value) { return valid ? json(value) : json(nullptr); }

json estimate_json(const Estimate& e, const std::string& name) {
  return {{name, e.value},
          {name + "_lo", maybe(e.has_interval, e.lo)},
          {name + "_hi", maybe(e.has_interval, e.hi)},
          {"interval", e.basis.empty() ? json(nullptr) : json(e.basis)}};
}

// A cell's numbers: one result per protocol and length, a skipped length saying why.
json cell_json(const StudySpec& spec, const CellResults& c, const BootstrapOptions& bootstrap) {
  json cj = {{"name", c.name},
             {"group", c.group},
             {"seed", c.seed},
             {"encoding", c.encoding},
             {"overrides", c.overrides},
             {"steps", c.steps},
             {"timing", {{"train_s", c.train_seconds}, {"eval_s", c.eval_seconds}}},
             {"results", json::array()}};
  for (size_t p = 0; p < c.results.size(); ++p) {
    for (size_t li = 0; li < c.results[p].size(); ++li) {
      json r;
      if (c.results[p][li]) {
        r = summary_to_json(*c.results[p][li], reports_bpc(c.tokenizer), bootstrap,
                            c.bytes_per_token);
        r["per_position"] = per_position_to_json(*c.results[p][li]);
      } else {
        r = {{"length", spec.eval.lengths[li]}, {"skipped", c.skipped[p][li]}};
      }
      r["protocol"] = spec.protocols[p].label;
      cj["results"].push_back(r);
    }
  }
  if (!c.probes_over_steps.empty()) cj["probes_over_steps"] = c.probes_over_steps;
  return cj;
}

// One length of a group under one protocol: its estimates over the seeds, or why there are
// none.
json group_row_json(const GroupStats& g, const LengthStats& row) {
  json r = {{"length", row.length}};
  if (!row.unavailable.empty()) {
    r["unavailable"] = row.unavailable;
    return r;
  }
  r["seeds"] = row.seeds;
  r["mean_nll"] = row.mean_nll;
  r.update(estimate_json(row.ppl, "ppl"));
  if (g.bytes_per_token > 0)
    r.update(estimate_json(bits_per_byte_estimate(row.ppl, g.bytes_per_token), "bpb"));
  if (row.has_vs_baseline) {
    json b = estimate_json(row.ppl_ratio, "ppl_ratio");
    b.update(estimate_json(row.nll_diff, "nll_diff"));
    b["pairs"] = row.pairs;
    b["significant"] = row.significant;
    r["vs_baseline"] = b;
  }
  if (row.has_vs_train) r["vs_train_length"] = estimate_json(row.train_ratio, "ppl_ratio");
  r["per_position"] = {{"bucket_start", row.position_start}, {"mean_nll", row.position_nll}};
  return r;
}

json group_json(const StudySpec& spec, const GroupStats& g) {
  json gj = {{"name", g.name},
             {"encoding", g.encoding},
             {"tokenizer", g.tokenizer},
             {"bytes_per_token", g.bytes_per_token},
             {"train_length", g.train_length},
             {"seeds", g.seeds},
             {"protocols", json::array()}};
  for (size_t p = 0; p < g.rows.size(); ++p) {
    json rows = json::array();
    for (const auto& row : g.rows[p]) rows.push_back(group_row_json(g, row));
    gj["protocols"].push_back({{"label", spec.protocols[p].label}, {"rows", rows}});
  }
  return gj;
}

}  // namespace

json study_results_json(const StudySpec& spec, const std::vector<CellResults>& cells,
                        const StudyStats& stats, const StudyReportInfo& info) {
  const BootstrapOptions bootstrap;
  json j = {{"format", "txl-study-results"},
            {"version", 1},
            {"txl_version", txl_version()},
            {"machine", info.machine},
            {"study_config", info.config_path},
            {"study", study_manifest(spec)},
            {"baseline", stats.baseline},
            {"statistics",
             {{"method", kStatisticsMethod}, {"level", 0.95}, {"single_seed", to_json(bootstrap)}}},
            {"protocols", protocol_labels(spec)},
            {"lengths", spec.eval.lengths},
            {"cells", json::array()},
            {"groups", json::array()},
            {"missing_cells", stats.missing_cells}};
  for (const auto& c : cells) j["cells"].push_back(cell_json(spec, c, bootstrap));
  for (const auto& g : stats.groups) j["groups"].push_back(group_json(spec, g));
  return j;
}

}  // namespace txl
