// Copy distance (after Sun et al. 2021): does the model still profit from having seen a span
// when the span comes back d tokens later?
//
// An instance draws from the split a span A of n tokens, a second span B of n tokens and a
// filler F of d tokens, and builds two windows that differ only in their first span:
//   repeated  A F A      control  B F A
// Both score the last n targets (the final A, teacher-forced). Copy gain at d is the mean
// over instances of NLL(final A | control) - NLL(final A | repeated), in nats per token: how
// much the first copy of A, d tokens back, lowers the loss. A model that does not use
// context that far back shows a gain near 0 (a result, not a failure).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "txl/eval/interval.h"
#include "txl/probe/probe_scoring.h"
#include "txl/probe/probe_shard.h"

namespace txl {

struct CopyProbeOptions {
  int64_t span = 16;               // n
  std::vector<int64_t> distances;  // d values
  int64_t count = 200;             // instances per distance
  uint64_t seed = 1;
  ProbeScoreOptions scoring;
  std::function<void(double)> progress;  // fraction of the tokens forwarded so far; may be empty
};

struct CopyInstance {
  std::vector<int32_t> repeated;  // A F A: 2n + d tokens
  std::vector<int32_t> control;   // B F A
  int64_t span_start = 0;         // where A was drawn from in the split
};

// `count` instances at distance d, drawn from `ids` with `seed` (the same for every model):
// InputError when the split is shorter than 3n + d tokens (A, B and F are drawn apart).
std::vector<CopyInstance> build_copy_instances(const std::vector<int32_t>& ids, int64_t span,
                                               int64_t distance, int64_t count, uint64_t seed);

struct CopyDistanceRow {
  int64_t distance = 0;
  int64_t instances = 0;
  double nll_repeated = 0.0;  // mean NLL per token of the final A after A F
  double nll_control = 0.0;   // ... after B F
  double gain = 0.0;          // nll_control - nll_repeated
  Interval gain_interval;     // over instances (normal approximation, 95%)
};

struct CopyProbeResult {
  int64_t span = 0;
  uint64_t seed = 0;
  std::vector<CopyDistanceRow> rows;  // in the order of options.distances
};

// Shard `shard`'s part (probe_shard.h): per distance d_i, the mean NLL of the final A in its
// block of the repeated windows (group 2i) and of the control windows (group 2i + 1).
nlohmann::json score_copy_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                const CopyProbeOptions& options, const ProbeShard& shard);
// The result from every shard's partial, in shard order (reads span, distances, count, seed).
CopyProbeResult finish_copy_probe(const std::vector<nlohmann::json>& partials,
                                  const CopyProbeOptions& options);
// One process: the finish of shard 0 of 1.
CopyProbeResult run_copy_probe(TransformerLM& model, const std::vector<int32_t>& ids,
                               const CopyProbeOptions& options);

nlohmann::json to_json(const CopyProbeResult& result);

}  // namespace txl
