// The attention-statistics probe on the registry (attention_stats.h holds the definitions):
// entropy and mean distance per layer against the window length, and the average attention
// by distance of every head at the longest length (Transformer-XL's Appendix D picture).
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/probe/attention_stats.h"
#include "txl/probe/probe.h"
#include "txl/util/error.h"

namespace txl {

namespace {

constexpr int64_t kProfileBuckets = 32;  // distance buckets in the picture

ProbeValues attention_defaults(const ProbeSubject& subject) {
  ProbeValues v;
  for (const int64_t length : default_lengths(subject))
    v.values["lengths"].push_back(double(length));
  if (v.values["lengths"].empty()) v.values["lengths"] = {double(longest_length(subject))};
  v.values["windows"] = {16};
  return v;
}

// The request as the values give it; scoring settings come from the subject (attention_score).
AttentionStatsRequest attention_request(const ProbeValues& v) {
  AttentionStatsRequest r;
  r.lengths = v.integers("lengths");
  r.windows = v.integer("windows");
  r.seed = v.seed;
  const int64_t longest = *std::max_element(r.lengths.begin(), r.lengths.end());
  r.buckets.width = std::max<int64_t>(1, (longest + kProfileBuckets - 1) / kProfileBuckets);
  r.buckets.count = (longest + r.buckets.width - 1) / r.buckets.width;
  return r;
}

void attention_check(const ProbeSubject& subject, const ProbeValues& v) {
  const auto r = attention_request(v);
  const int64_t longest = *std::max_element(r.lengths.begin(), r.lengths.end());
  check_window_fits(subject, longest, "attention.lengths");
  if (longest + 1 > static_cast<int64_t>(subject.ids->size())) {
    throw InputError(fmt::format("attention.lengths {} is longer than the split ({} tokens)",
                                 longest, subject.ids->size()));
  }
}

ProbeWorkload attention_workload(const ProbeSubject& /*subject*/, const ProbeValues& v) {
  // One length at a time: `windows` windows of L + 1 tokens.
  const auto r = attention_request(v);
  ProbeWorkload w;
  w.window = *std::max_element(r.lengths.begin(), r.lengths.end()) + 1;
  w.windows = r.windows;
  for (const int64_t length : r.lengths) w.tokens += double(r.windows) * double(length + 1);
  w.instance_bytes = double(w.windows) * double(w.window) * double(sizeof(int32_t));
  return w;
}

// Per layer: the mean over heads of one statistic.
double head_mean(const std::vector<HeadStats>& heads, double HeadStats::*field) {
  double sum = 0;
  for (const auto& h : heads) sum += h.*field;
  return heads.empty() ? 0.0 : sum / static_cast<double>(heads.size());
}

void add_profile(const AttentionStatsAtLength& at, std::vector<ProbeMetric>& metrics) {
  const std::string grid = fmt::format("attention by distance at L={}", at.length);
  for (size_t l = 0; l < at.heads.size(); ++l) {
    for (size_t h = 0; h < at.heads[l].size(); ++h) {
      const auto& profile = at.heads[l][h].profile;
      for (size_t b = 0; b < profile.size(); ++b) {
        ProbeMetric m{grid + ", layer.head " + std::to_string(l + 1) + "." + std::to_string(h + 1),
                      "distance", double(static_cast<int64_t>(b) * at.buckets.width), profile[b]};
        m.grid = grid;
        m.y_name = "layer.head";
        m.grid_y = double(l + 1) + double(h + 1) / (at.heads[l].size() < 10 ? 10.0 : 100.0);
        m.in_table = false;
        metrics.push_back(m);
      }
    }
  }
}

nlohmann::json attention_score(const ProbeSubject& subject, const ProbeValues& v,
                               const ProbeShard& shard, const ProbeProgressFn& progress) {
  const auto request = scored_on(attention_request(v), subject, progress);
  return score_attention_shard(*subject.model, *subject.ids, request, shard);
}

ProbeRun attention_finish(const std::vector<nlohmann::json>& partials, const ProbeValues& v) {
  const auto r = finish_attention_stats(partials, attention_request(v));
  ProbeRun out;
  out.detail = to_json(r);
  const size_t layers = r.lengths.empty() ? 0 : r.lengths.front().heads.size();
  for (size_t l = 0; l < layers; ++l) {
    for (const auto& at : r.lengths)
      out.metrics.push_back({fmt::format("attention entropy (nats), layer {}", l + 1), "length",
                             double(at.length), head_mean(at.heads[l], &HeadStats::entropy)});
  }
  for (size_t l = 0; l < layers; ++l) {
    for (const auto& at : r.lengths)
      out.metrics.push_back({fmt::format("mean attention distance (tokens), layer {}", l + 1),
                             "length", double(at.length),
                             head_mean(at.heads[l], &HeadStats::distance)});
  }
  if (!r.lengths.empty()) {
    const auto longest =
        std::max_element(r.lengths.begin(), r.lengths.end(),
                         [](const auto& a, const auto& b) { return a.length < b.length; });
    add_profile(*longest, out.metrics);
  }
  return out;
}

}  // namespace

Probe attention_probe() {
  Probe p;
  p.name = "attention";
  p.description =
      "attention statistics: per layer, entropy (mean over queries of -sum p log p) and mean "
      "distance (sum p (i - j)) against the window length, and attention by distance per head";
  p.cost = "windows x sum over lengths of L tokens forwarded, probabilities read once more";
  p.options = {{"lengths", 1, 1 << 24, true, true,
                "window lengths (default: the evaluated lengths, n/a ones left out)"},
               {"windows", 1, 100000, true, false, "windows per length (default 16)"}};
  p.defaults = attention_defaults;
  p.check = attention_check;
  p.workload = attention_workload;
  p.score = attention_score;
  p.finish = attention_finish;
  p.group = nullptr;
  return p;
}

}  // namespace txl
