// What every probe shares: deterministic draws from the split, windows scored in batches
// under the evaluation settings, and the intervals probes report over their instances.
//
// A probe window is a plain token sequence w[0..n-1]: the model reads w[0..n-2] and each
// position predicts the next token, so a window of n tokens holds n - 1 targets. Only the
// last `scored` targets are kept, and the model's last layer computes only those
// (ForwardOptions::score_from): the earlier positions are context. Windows run without
// memory: the window itself holds every token of context (an encoding with memory sees
// its context as keys of one segment, the same attention it gives memory rows).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/interval.h"
#include "txl/model/attention_observer.h"
#include "txl/model/sampling.h"
#include "txl/model/transformer.h"

namespace txl {

// `count` starts drawn uniformly from [lo, hi) (hi > lo), distinct while the range allows,
// in the order drawn.
std::vector<int64_t> draw_positions(SplitMix64& rng, int64_t count, int64_t lo, int64_t hi);

struct ProbeScoreOptions {
  int64_t batch_tokens = 8192;  // windows per forward pass = max(1, batch_tokens / (n - 1))
  Precision precision = Precision::kFp32;
  bool want_argmax = false;               // also the argmax token of every scored target
  AttentionObserver* observer = nullptr;  // attention statistics (attention_stats.h)
  // The fraction of this call's windows done, inside a forward pass too (layer by layer), so
  // that one long window shows progress. May be empty.
  std::function<void(double)> progress;
};

// Windows of `length` tokens per forward pass: max(1, batch_tokens / (length - 1)). The one
// rule score_windows batches by and probe shards are cut along (probe_shard.h).
int64_t windows_per_pass(int64_t batch_tokens, int64_t length);

// Per window, its last `scored` targets.
struct ScoredWindows {
  std::vector<std::vector<double>> nll;      // [windows][scored] nats
  std::vector<std::vector<int64_t>> argmax;  // [windows][scored] (want_argmax only)
};

// Every window must have the same length n >= 2 and 1 <= scored <= n - 1.
ScoredWindows score_windows(TransformerLM& model, const std::vector<std::vector<int32_t>>& windows,
                            int64_t scored, const ProbeScoreOptions& options);

// Normal-approximation 95% interval of the mean of per-instance values (valid with >= 2).
Interval mean_interval(const std::vector<double>& values);
// Wilson 95% interval of a proportion of `hits` in `trials` (valid with >= 1 trial).
Interval proportion_interval(int64_t hits, int64_t trials);

double mean_of(const std::vector<double>& values);

}  // namespace txl
