// A study's manifest (DIR/study.json): what a later invocation is compared with before it may
// join the same study, and how two manifests differ (study_config.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/config_diff.h"
#include "txl/study/study_config.h"
#include "txl/study/study_eval_config.h"
#include "txl/util/text.h"

namespace txl {

using nlohmann::json;

json study_eval_json(const StudyEval& e) {
  json j = {{"split", e.split}, {"methods", e.methods},       {"lengths", e.lengths},
            {"aids", e.aids},   {"max_tokens", e.max_tokens}, {"checkpoint", e.checkpoint}};
  add_study_settings_json(e, j);
  // Only with probes, so a study written before probes existed keeps its manifest; adding
  // probes later evaluates every cell again (perplexity from the runs' caches).
  if (!e.probes.names.empty()) j["probes"] = to_json(e.probes);
  return j;
}

json study_manifest(const StudySpec& spec) {
  json grid = json::array();
  for (const auto& axis : spec.grid) grid.push_back({{"key", axis.key}, {"values", axis.values}});
  return {{"format", "txl-study"},
          {"version", 1},
          {"base", config_to_json(config_from_json(spec.base, spec.source))},
          {"grid", grid},
          {"eval", study_eval_json(spec.eval)}};
}

namespace {

// A removed grid value is a difference when a cell that held it has results.
void removed_values(const json& saved, const json& now, const CellHasResults& has_results,
                    std::vector<std::string>& out) {
  std::vector<GridAxis> grid;
  for (const auto& a : saved.at("grid")) {
    grid.push_back({a.at("key").get<std::string>(), {}});
    for (const auto& v : a.at("values")) grid.back().values.push_back(v);
  }
  for (size_t a = 0; a < grid.size(); ++a) {
    const auto& now_values = now["grid"][a]["values"];
    for (const auto& v : grid[a].values) {
      if (std::find(now_values.begin(), now_values.end(), v) != now_values.end()) continue;
      std::vector<std::string> with_results;
      for (const auto& name : cell_names_with(grid, a, v)) {
        if (!has_results || has_results(name)) with_results.push_back(name);
      }
      if (with_results.empty()) continue;  // its cells never trained: nothing is orphaned
      out.push_back("grid[\"" + grid[a].key + "\"] no longer lists " + v.dump() +
                    " (values may be added, not removed; only a value whose cells never "
                    "trained may go, and " +
                    join(with_results) + " did)");
    }
  }
}

}  // namespace

std::vector<std::string> study_differences(const json& saved, const json& now,
                                           const CellHasResults& has_results) {
  std::vector<std::string> out;
  for (const auto& d : config_differences(saved.at("base"), now.at("base"), {"train.threads"}))
    out.push_back("base " + d);
  for (const auto& [key, value] : saved.at("eval").items()) {
    if (!now.at("eval").contains(key) || now["eval"][key] != value)
      out.push_back(fmt::format("eval.{}: {} vs {}", key, value.dump(),
                                now["eval"].value(key, json()).dump()));
  }
  std::vector<std::string> saved_keys, now_keys;
  for (const auto& a : saved.at("grid")) saved_keys.push_back(a.at("key"));
  for (const auto& a : now.at("grid")) now_keys.push_back(a.at("key"));
  if (saved_keys != now_keys) {
    out.push_back("grid keys: " + join(saved_keys) + " vs " + join(now_keys));
    return out;
  }
  removed_values(saved, now, has_results, out);
  return out;
}

}  // namespace txl
