#include "txl/probe/copy_distance.h"

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

nlohmann::json score_copy_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                const CopyProbeOptions& options, const ProbeShard& shard) {
  std::vector<WindowGroup> groups;  // per distance: its repeated, then its control windows
  for (const int64_t d : options.distances) {
    for (int kind = 0; kind < 2; ++kind) groups.push_back({options.count, 2 * options.span + d});
  }
  const auto blocks = shard_windows(groups, options.scoring.batch_tokens, shard);
  double total = 0, done = 0;  // tokens this shard forwards
  for (size_t g = 0; g < groups.size(); ++g)
    total += double(blocks[g].second - blocks[g].first) * double(groups[g].length);
  nlohmann::json pieces = nlohmann::json::array();
  for (size_t i = 0; i < options.distances.size(); ++i) {
    const auto& rep = blocks[2 * i];
    const auto& ctl = blocks[2 * i + 1];
    if (rep.first == rep.second && ctl.first == ctl.second) continue;
    const auto instances =
        build_copy_instances(ids, options.span, options.distances[i], options.count, options.seed);
    for (int kind = 0; kind < 2; ++kind) {
      const auto [first, end] = blocks[2 * i + size_t(kind)];
      if (first == end) continue;
      std::vector<std::vector<int32_t>> windows;
      for (int64_t k = first; k < end; ++k) {
        const auto& inst = instances[size_t(k)];
        windows.push_back(kind == 0 ? inst.repeated : inst.control);
      }
      // Progress inside the block too (a distance of 200,000 tokens is one long pass).
      const double share = double(end - first) * double(groups[2 * i].length);
      ProbeScoreOptions scoring = options.scoring;
      if (options.progress)
        scoring.progress = [&](double f) { options.progress((done + f * share) / total); };
      nlohmann::json records = nlohmann::json::array();
      for (const auto& row : score_windows(model, windows, options.span, scoring).nll)
        records.push_back(mean_of(row));  // mean NLL per token of the final A
      pieces.push_back(shard_piece(2 * i + size_t(kind), first, end, std::move(records)));
      done += share;
      if (options.progress) options.progress(done / total);
    }
  }
  return {{"pieces", pieces}};
}

CopyProbeResult finish_copy_probe(const std::vector<nlohmann::json>& partials,
                                  const CopyProbeOptions& options) {
  const std::vector<int64_t> sizes(2 * options.distances.size(), options.count);
  const auto records = gather_pieces(partials, sizes, "copy");
  CopyProbeResult result;
  result.span = options.span;
  result.seed = options.seed;
  for (size_t i = 0; i < options.distances.size(); ++i) {
    std::vector<double> with_copy, without, gains;
    for (const auto& r : records[2 * i]) with_copy.push_back(r.get<double>());
    for (const auto& r : records[2 * i + 1]) without.push_back(r.get<double>());
    for (size_t k = 0; k < with_copy.size(); ++k) gains.push_back(without[k] - with_copy[k]);
    CopyDistanceRow row;
    row.distance = options.distances[i];
    row.instances = options.count;
    row.nll_repeated = mean_of(with_copy);
    row.nll_control = mean_of(without);
    row.gain = mean_of(gains);
    row.gain_interval = mean_interval(gains);
    result.rows.push_back(row);
  }
  return result;
}

CopyProbeResult run_copy_probe(TransformerLM& model, const std::vector<int32_t>& ids,
                               const CopyProbeOptions& options) {
  return finish_copy_probe({score_copy_shard(model, ids, options, {})}, options);
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
