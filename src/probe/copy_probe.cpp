#include "txl/probe/copy_probe.h"

#include <spdlog/fmt/fmt.h>

#include "txl/util/error.h"

namespace txl {

namespace {

std::vector<int32_t> slice(const std::vector<int32_t>& ids, int64_t start, int64_t len) {
  return {ids.begin() + start, ids.begin() + start + len};
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& part) {
  to.insert(to.end(), part.begin(), part.end());
}

}  // namespace

std::vector<CopyInstance> build_copy_instances(const std::vector<int32_t>& ids, int64_t span,
                                               int64_t distance, int64_t count, uint64_t seed) {
  const int64_t n = static_cast<int64_t>(ids.size());
  // One stretch of the split holds B, A and F in that order, so the three never overlap.
  const int64_t stretch = 2 * span + distance;
  if (span < 1 || distance < 0 || stretch > n) {
    throw InputError(fmt::format(
        "copy probe: span {} and distance {} need {} tokens of the evaluated split, which has {}",
        span, distance, stretch, n));
  }
  // A seed per distance, so adding a distance leaves the others' instances as they were.
  SplitMix64 rng(seed * 0x100000001B3ULL + static_cast<uint64_t>(distance));
  std::vector<CopyInstance> out;
  for (const int64_t start : draw_positions(rng, count, 0, n - stretch + 1)) {
    const auto b = slice(ids, start, span);
    const auto a = slice(ids, start + span, span);
    const auto filler = slice(ids, start + 2 * span, distance);
    CopyInstance inst;
    inst.span_start = start + span;
    for (auto* w : {&inst.repeated, &inst.control}) w->reserve(static_cast<size_t>(stretch + span));
    append(inst.repeated, a);
    append(inst.control, b);
    for (auto* w : {&inst.repeated, &inst.control}) {
      append(*w, filler);
      append(*w, a);
    }
    out.push_back(std::move(inst));
  }
  return out;
}

namespace {

// Mean NLL per token of each window's last `span` targets.
std::vector<double> span_losses(TransformerLM& model, const std::vector<std::vector<int32_t>>& w,
                                int64_t span, const ProbeScoreOptions& scoring) {
  const auto scored = score_windows(model, w, span, scoring);
  std::vector<double> out;
  for (const auto& row : scored.nll) out.push_back(mean_of(row));
  return out;
}

}  // namespace

CopyProbeResult run_copy_probe(TransformerLM& model, const std::vector<int32_t>& ids,
                               const CopyProbeOptions& options) {
  CopyProbeResult result;
  result.span = options.span;
  result.seed = options.seed;
  double total = 0, done = 0;  // tokens forwarded: 2 n + d per window
  for (const int64_t d : options.distances) total += static_cast<double>(2 * options.span + d);
  for (const int64_t d : options.distances) {
    const auto instances = build_copy_instances(ids, options.span, d, options.count, options.seed);
    std::vector<std::vector<int32_t>> repeated, control;
    for (const auto& inst : instances) {
      repeated.push_back(inst.repeated);
      control.push_back(inst.control);
    }
    // Progress inside the distance too: the repeated windows are its first half, the controls
    // its second (a distance of 200,000 tokens is one long pass per window).
    const double share = static_cast<double>(2 * options.span + d);
    ProbeScoreOptions scoring = options.scoring;
    double half = 0;
    if (options.progress)
      scoring.progress = [&](double f) {
        options.progress((done + (half + f) / 2 * share) / total);
      };
    const auto with_copy = span_losses(model, repeated, options.span, scoring);
    half = 1;
    const auto without = span_losses(model, control, options.span, scoring);
    std::vector<double> gains;
    for (size_t i = 0; i < with_copy.size(); ++i) gains.push_back(without[i] - with_copy[i]);
    CopyDistanceRow row;
    row.distance = d;
    row.instances = static_cast<int64_t>(instances.size());
    row.nll_repeated = mean_of(with_copy);
    row.nll_control = mean_of(without);
    row.gain = mean_of(gains);
    row.gain_interval = mean_interval(gains);
    result.rows.push_back(row);
    done += share;
    if (options.progress) options.progress(done / total);
  }
  return result;
}

nlohmann::json to_json(const CopyProbeResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : result.rows) {
    rows.push_back({{"distance", r.distance},
                    {"instances", r.instances},
                    {"nll_repeated", r.nll_repeated},
                    {"nll_control", r.nll_control},
                    {"gain", r.gain},
                    {"gain_lo", r.gain_interval.lo},
                    {"gain_hi", r.gain_interval.hi}});
  }
  return {{"span", result.span},
          {"seed", result.seed},
          {"rows", rows},
          {"layout", "repeated: A F A, control: B F A; scored: the final A"}};
}

}  // namespace txl
