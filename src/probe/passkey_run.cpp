// Scoring passkey windows: the final key, teacher-forced, per (length, depth) cell.
#include <cmath>

#include "txl/probe/passkey_probe.h"

namespace txl {

namespace {

PasskeyCell score_cell(TransformerLM& model, const std::vector<PasskeyInstance>& trials,
                       const PasskeyProbeOptions& o, const std::function<void(double)>& progress) {
  std::vector<std::vector<int32_t>> windows;
  for (const auto& t : trials) windows.push_back(t.window);
  ProbeScoreOptions scoring = o.scoring;
  scoring.want_argmax = true;
  scoring.progress = progress;
  const auto scored = score_windows(model, windows, o.key_len, scoring);
  PasskeyCell cell;
  const auto& first = trials.front();
  cell.length = first.length;
  cell.depth = first.depth;
  cell.key_start = first.key_start;
  cell.distance = first.length - o.key_len - first.key_start;
  cell.trials = static_cast<int64_t>(trials.size());
  std::vector<double> logprobs;
  for (size_t i = 0; i < trials.size(); ++i) {
    bool all = true;
    double lp = 0;
    for (int64_t k = 0; k < o.key_len; ++k) {
      all = all && scored.argmax[i][size_t(k)] == trials[i].key[size_t(k)];
      lp -= scored.nll[i][size_t(k)];
    }
    cell.correct += all ? 1 : 0;
    logprobs.push_back(lp);
  }
  cell.accuracy = static_cast<double>(cell.correct) / static_cast<double>(cell.trials);
  cell.accuracy_interval = proportion_interval(cell.correct, cell.trials);
  cell.logprob = mean_of(logprobs);
  cell.token_logprob = cell.logprob / static_cast<double>(o.key_len);
  cell.logprob_interval = mean_interval(logprobs);
  return cell;
}

}  // namespace

PasskeyProbeResult run_passkey_probe(TransformerLM& model, const std::vector<int32_t>& ids,
                                     const std::vector<int32_t>& candidates,
                                     const PasskeyProbeOptions& options) {
  PasskeyProbeResult result;
  result.seed = options.seed;
  result.key_len = options.key_len;
  result.cue_len = options.cue_len;
  result.candidates = candidates;
  const auto instances = build_passkey_instances(ids, candidates, options);
  const size_t per_cell = static_cast<size_t>(options.trials);
  double total = 0, done = 0;  // tokens forwarded
  for (const auto& inst : instances) total += static_cast<double>(inst.length);
  for (size_t first = 0; first < instances.size(); first += per_cell) {
    const std::vector<PasskeyInstance> cell(instances.begin() + long(first),
                                            instances.begin() + long(first + per_cell));
    const double cell_tokens = static_cast<double>(per_cell * size_t(cell.front().length));
    std::function<void(double)> within;  // a window of 16,000 tokens takes a while: show it
    if (options.progress)
      within = [&](double f) { options.progress((done + f * cell_tokens) / total); };
    result.cells.push_back(score_cell(model, cell, options, within));
    done += cell_tokens;
    if (options.progress) options.progress(done / total);
  }
  return result;
}

nlohmann::json to_json(const PasskeyProbeResult& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : r.cells) {
    cells.push_back({{"length", c.length},
                     {"depth", c.depth},
                     {"key_start", c.key_start},
                     {"distance", c.distance},
                     {"trials", c.trials},
                     {"correct", c.correct},
                     {"accuracy", c.accuracy},
                     {"accuracy_lo", c.accuracy_interval.lo},
                     {"accuracy_hi", c.accuracy_interval.hi},
                     {"logprob", c.logprob},
                     {"token_logprob", c.token_logprob},
                     {"logprob_lo", c.logprob_interval.lo},
                     {"logprob_hi", c.logprob_interval.hi}});
  }
  return {{"seed", r.seed},
          {"key_len", r.key_len},
          {"cue_len", r.cue_len},
          {"candidates", r.candidates},
          {"cells", cells},
          {"layout", "filler[0,s) cue key filler[s,F) cue key; scored: the final key"}};
}

}  // namespace txl
