// The copy-distance probe on the registry (copy_distance.h holds the definition): copy gain
// against the distance d between a span and its repetition.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/probe/copy_distance.h"
#include "txl/probe/probe.h"

namespace txl {

namespace {

ProbeValues copy_defaults(const ProbeSubject& subject) {
  // d from half the training length to 7x it (32 .. 448 for a model trained on 64 tokens),
  // so that 2n + d runs from inside the training length to the longest evaluated lengths.
  const int64_t t = std::max<int64_t>(2, subject.config->train.tgt_len);
  ProbeValues v;
  v.values["span"] = {16};
  v.values["distances"] = {double(t / 2), double(t), double(2 * t), double(4 * t), double(7 * t)};
  v.values["count"] = {200};
  return v;
}

// The options as the values give them; scoring settings come from the subject (copy_score).
CopyProbeOptions copy_options(const ProbeValues& v) {
  CopyProbeOptions o;
  o.span = v.integer("span");
  o.distances = v.integers("distances");
  o.count = v.integer("count");
  o.seed = v.seed;
  return o;
}

void copy_check(const ProbeSubject& subject, const ProbeValues& v) {
  const auto o = copy_options(v);
  const int64_t longest = *std::max_element(o.distances.begin(), o.distances.end());
  check_window_fits(subject, 2 * o.span + longest, "copy.distances with copy.span");
  build_copy_instances(*subject.ids, o.span, longest, 1, o.seed);  // the split is long enough
}

ProbeWorkload copy_workload(const ProbeSubject& /*subject*/, const ProbeValues& v) {
  // One distance at a time: its instances (a repeated and a control window each) and the
  // copies of those windows handed to scoring.
  const auto o = copy_options(v);
  const int64_t longest = *std::max_element(o.distances.begin(), o.distances.end());
  ProbeWorkload w;
  w.window = 2 * o.span + longest;
  w.windows = 2 * o.count;
  w.instance_bytes = 4.0 * double(o.count) * double(w.window) * double(sizeof(int32_t));
  for (const int64_t d : o.distances) w.tokens += 2.0 * double(o.count) * double(2 * o.span + d);
  return w;
}

nlohmann::json copy_score(const ProbeSubject& subject, const ProbeValues& v,
                          const ProbeShard& shard, const ProbeProgressFn& progress) {
  const auto options = scored_on(copy_options(v), subject, progress);
  return score_copy_shard(*subject.model, *subject.ids, options, shard);
}

ProbeRun copy_finish(const std::vector<nlohmann::json>& partials, const ProbeValues& v) {
  const CopyProbeResult r = finish_copy_probe(partials, copy_options(v));
  ProbeRun out;
  out.detail = to_json(r);
  for (const auto& row : r.rows) {
    const double d = static_cast<double>(row.distance);
    ProbeMetric gain{"copy gain (nats/token)", "d", d, row.gain};
    gain.has_interval = row.gain_interval.valid;
    gain.lo = row.gain_interval.lo;
    gain.hi = row.gain_interval.hi;
    out.metrics.push_back(gain);
  }
  for (const auto& row : r.rows)
    out.metrics.push_back(
        {"NLL of the repeated span (nats/token)", "d", double(row.distance), row.nll_repeated});
  for (const auto& row : r.rows)
    out.metrics.push_back(
        {"NLL of the control span (nats/token)", "d", double(row.distance), row.nll_control});
  return out;
}

}  // namespace

Probe copy_probe() {
  Probe p;
  p.name = "copy";
  p.description =
      "copy distance: a span of the split, d tokens of other text, the span again; copy gain = "
      "NLL of the span after a different span minus NLL after itself, against d";
  p.cost = "2 x count x sum over d of (2 span + d) tokens forwarded";
  p.options = {
      {"span", 1, 4096, true, false, "n, tokens per span (default 16)"},
      {"distances", 0, 1 << 24, true, true,
       "d, tokens between the two copies (default T/2, T, 2T, 4T, 7T for training length T)"},
      {"count", 1, 100000, true, false, "instances per distance (default 200)"}};
  p.defaults = copy_defaults;
  p.check = copy_check;
  p.workload = copy_workload;
  p.score = copy_score;
  p.finish = copy_finish;
  p.group = nullptr;
  return p;
}

}  // namespace txl
