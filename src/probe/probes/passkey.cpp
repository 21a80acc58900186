// The teacher-forced passkey probe on the registry (passkey_windows.h holds the definition):
// key accuracy and log-probability over a grid of window length x needle depth.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/data/tokenizers.h"
#include "txl/probe/passkey_windows.h"
#include "txl/probe/probe.h"

namespace txl {

namespace {

constexpr int64_t kKeyLen = 5;  // YaRN's keys are 1..50000: up to 5 digits
constexpr int64_t kCueLen = 8;

ProbeValues passkey_defaults(const ProbeSubject& subject) {
  ProbeValues v;
  for (const int64_t length : default_lengths(subject)) {
    if (length >= 2 * (kKeyLen + kCueLen)) v.values["lengths"].push_back(double(length));
  }
  if (v.values["lengths"].empty()) v.values["lengths"] = {double(longest_length(subject))};
  v.values["depths"] = {0.0, 0.25, 0.5, 0.75, 1.0};
  v.values["trials"] = {20};
  v.values["key_len"] = {double(kKeyLen)};
  v.values["cue_len"] = {double(kCueLen)};
  return v;
}

// The options as the values give them; scoring settings come from the subject (passkey_score).
PasskeyProbeOptions passkey_options(const ProbeValues& v) {
  PasskeyProbeOptions o;
  o.lengths = v.integers("lengths");
  o.depths = v.numbers("depths");
  o.trials = v.integer("trials");
  o.key_len = v.integer("key_len");
  o.cue_len = v.integer("cue_len");
  o.seed = v.seed;
  return o;
}

std::vector<int32_t> candidates(const ProbeSubject& subject) {
  // A char or byte run without digits: its 10 rarest symbols (a word run: 100 rarest words).
  const bool chars = tokenizer_def(subject.vocab->kind()).per_symbol;
  return passkey_candidates(*subject.vocab, *subject.ids, chars ? 10 : 100);
}

void passkey_check(const ProbeSubject& subject, const ProbeValues& v) {
  const auto o = passkey_options(v);
  check_window_fits(subject, *std::max_element(o.lengths.begin(), o.lengths.end()),
                    "passkey.lengths");
  auto one = o;  // every window can be built: one trial per cell shows it, without holding them all
  one.trials = 1;
  build_passkey_instances(*subject.ids, candidates(subject), one);
}

ProbeWorkload passkey_workload(const ProbeSubject& /*subject*/, const ProbeValues& v) {
  // Every instance is built before the first cell is scored; a cell's trials are scored together.
  const auto o = passkey_options(v);
  double tokens = 0;
  for (const int64_t length : o.lengths) tokens += double(length);
  const int64_t longest = *std::max_element(o.lengths.begin(), o.lengths.end());
  ProbeWorkload w;
  w.instance_bytes = (tokens * double(o.depths.size()) + 2.0 * double(longest)) * double(o.trials) *
                     double(sizeof(int32_t));
  w.window = longest;
  w.windows = o.trials;
  w.tokens = tokens * double(o.depths.size()) * double(o.trials);
  return w;
}

nlohmann::json passkey_score(const ProbeSubject& subject, const ProbeValues& v,
                             const ProbeShard& shard, const ProbeProgressFn& progress) {
  const auto options = scored_on(passkey_options(v), subject, progress);
  return score_passkey_shard(*subject.model, *subject.ids, candidates(subject), options, shard);
}

ProbeRun passkey_finish(const std::vector<nlohmann::json>& partials, const ProbeValues& v) {
  const auto r = finish_passkey_probe(partials, passkey_options(v));
  ProbeRun out;
  out.detail = to_json(r);
  for (const auto& c : r.cells) {
    ProbeMetric m{fmt::format("key accuracy, depth {:g}", c.depth), "length", double(c.length),
                  c.accuracy};
    m.has_interval = c.accuracy_interval.valid;
    m.lo = c.accuracy_interval.lo;
    m.hi = c.accuracy_interval.hi;
    m.grid = "key accuracy";
    m.y_name = "depth";
    m.grid_y = c.depth;
    out.metrics.push_back(m);
  }
  for (const auto& c : r.cells) {
    ProbeMetric m{fmt::format("key log-prob per token (nats), depth {:g}", c.depth), "length",
                  double(c.length), c.token_logprob};
    m.grid = "key log-prob per token";
    m.y_name = "depth";
    m.grid_y = c.depth;
    out.metrics.push_back(m);
  }
  return out;
}

}  // namespace

Probe passkey_probe() {
  Probe p;
  p.name = "passkey";
  p.description =
      "teacher-forced passkey: a cue and a random key hidden at a depth of filler text, the cue "
      "again at the end; accuracy (every key token the argmax) and log-probability of the key";
  p.cost = "trials x depths x sum over lengths of L tokens forwarded";
  p.options = {
      {"lengths", 2, 1 << 24, true, true,
       "window lengths L (default: the evaluated lengths, n/a ones left out)"},
      {"depths", 0, 1, false, true, "needle depths, 0 = first .. 1 = last (default 0,0.25,..,1)"},
      {"trials", 1, 100000, true, false, "windows per (length, depth) cell (default 20)"},
      {"key_len", 1, 64, true, false,
       "tokens of the key (default 5), drawn from digits or the split's rarest tokens"},
      {"cue_len", 1, 256, true, false, "tokens of the cue (default 8)"}};
  p.defaults = passkey_defaults;
  p.check = passkey_check;
  p.workload = passkey_workload;
  p.score = passkey_score;
  p.finish = passkey_finish;
  p.group = nullptr;
  return p;
}

}  // namespace txl
