// A study's manifest (DIR/study.json): what a later invocation is compared with before it may
// join the same study, and how two manifests differ (study_config.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/config_diff.h"
#include "txl/study/study_config.h"
#include "txl/util/text.h"

namespace txl {

using nlohmann::json;

json study_eval_json(const StudyEval& e) {
  return {{"split", e.split},           {"methods", e.methods},      {"lengths", e.lengths},
          {"stride", e.stride},         {"mem_lens", e.mem_lens},    {"aids", e.aids},
          {"max_tokens", e.max_tokens}, {"checkpoint", e.checkpoint}};
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

std::vector<std::string> study_differences(const json& saved, const json& now) {
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
  for (size_t a = 0; a < saved_keys.size(); ++a) {
    const auto& now_values = now["grid"][a]["values"];
    for (const auto& v : saved["grid"][a]["values"]) {
      if (std::find(now_values.begin(), now_values.end(), v) == now_values.end())
        out.push_back("grid[\"" + saved_keys[a] + "\"] no longer lists " + v.dump() +
                      " (values may be added, not removed)");
    }
  }
  return out;
}

}  // namespace txl
