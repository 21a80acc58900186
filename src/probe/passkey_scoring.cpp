// Scoring passkey windows: the final key, teacher-forced, per (length, depth) cell; a shard
// scores its block of each cell's trials, the finish counts them per cell.
#include <cmath>

#include "txl/probe/passkey_windows.h"

namespace txl {

namespace {

// Each window's record: every key token the argmax, and the key's log-probability.
nlohmann::json score_trials(TransformerLM& model, const std::vector<PasskeyInstance>& trials,
                            const PasskeyProbeOptions& o,
                            const std::function<void(double)>& progress) {
  std::vector<std::vector<int32_t>> windows;
  for (const auto& t : trials) windows.push_back(t.window);
  ProbeScoreOptions scoring = o.scoring;
  scoring.want_argmax = true;
  scoring.progress = progress;
  const auto scored = score_windows(model, windows, o.key_len, scoring);
  nlohmann::json records = nlohmann::json::array();
  for (size_t i = 0; i < trials.size(); ++i) {
    bool all = true;
    double lp = 0;
    for (int64_t k = 0; k < o.key_len; ++k) {
      all = all && scored.argmax[i][size_t(k)] == trials[i].key[size_t(k)];
      lp -= scored.nll[i][size_t(k)];
    }
    records.push_back({{"correct", all ? 1 : 0}, {"logprob", lp}});
  }
  return records;
}

PasskeyCell finish_cell(int64_t length, double depth, const std::vector<nlohmann::json>& records,
                        const PasskeyProbeOptions& o) {
  PasskeyCell cell;
  cell.length = length;
  cell.depth = depth;
  cell.key_start = passkey_needle_start(length, depth, o.cue_len, o.key_len) + o.cue_len;
  cell.distance = length - o.key_len - cell.key_start;
  cell.trials = static_cast<int64_t>(records.size());
  std::vector<double> logprobs;
  for (const auto& r : records) {
    cell.correct += r.at("correct").get<int64_t>();
    logprobs.push_back(r.at("logprob").get<double>());
  }
  cell.accuracy = static_cast<double>(cell.correct) / static_cast<double>(cell.trials);
  cell.accuracy_interval = proportion_interval(cell.correct, cell.trials);
  cell.logprob = mean_of(logprobs);
  cell.token_logprob = cell.logprob / static_cast<double>(o.key_len);
  cell.logprob_interval = mean_interval(logprobs);
  return cell;
}

}  // namespace

nlohmann::json score_passkey_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                   const std::vector<int32_t>& candidates,
                                   const PasskeyProbeOptions& options, const ProbeShard& shard) {
  std::vector<WindowGroup> groups;  // cells in length-major order, as the instances are built
  for (const int64_t length : options.lengths) {
    for (size_t d = 0; d < options.depths.size(); ++d) groups.push_back({options.trials, length});
  }
  const auto blocks = shard_windows(groups, options.scoring.batch_tokens, shard);
  double total = 0, done = 0;  // tokens this shard forwards
  for (size_t g = 0; g < groups.size(); ++g)
    total += double(blocks[g].second - blocks[g].first) * double(groups[g].length);
  nlohmann::json pieces = nlohmann::json::array();
  if (total > 0) {
    const auto instances = build_passkey_instances(ids, candidates, options);
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto [first, end] = blocks[g];
      if (first == end) continue;
      const auto cell = instances.begin() + long(g) * long(options.trials);
      const std::vector<PasskeyInstance> trials(cell + long(first), cell + long(end));
      const double share = double(end - first) * double(groups[g].length);
      std::function<void(double)> within;  // a window of 16,000 tokens takes a while: show it
      if (options.progress)
        within = [&](double f) { options.progress((done + f * share) / total); };
      pieces.push_back(shard_piece(g, first, end, score_trials(model, trials, options, within)));
      done += share;
      if (options.progress) options.progress(done / total);
    }
  }
  return {{"candidates", candidates}, {"pieces", pieces}};
}

PasskeyProbeResult finish_passkey_probe(const std::vector<nlohmann::json>& partials,
                                        const PasskeyProbeOptions& options) {
  PasskeyProbeResult result;
  result.seed = options.seed;
  result.key_len = options.key_len;
  result.cue_len = options.cue_len;
  result.candidates = common_field(partials, "candidates", "passkey").get<std::vector<int32_t>>();
  const size_t cells = options.lengths.size() * options.depths.size();
  const auto records =
      gather_pieces(partials, std::vector<int64_t>(cells, options.trials), "passkey");
  for (size_t g = 0; g < cells; ++g) {
    const int64_t length = options.lengths[g / options.depths.size()];
    result.cells.push_back(
        finish_cell(length, options.depths[g % options.depths.size()], records[g], options));
  }
  return result;
}

PasskeyProbeResult run_passkey_probe(TransformerLM& model, const std::vector<int32_t>& ids,
                                     const std::vector<int32_t>& candidates,
                                     const PasskeyProbeOptions& options) {
  return finish_passkey_probe({score_passkey_shard(model, ids, candidates, options, {})}, options);
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
