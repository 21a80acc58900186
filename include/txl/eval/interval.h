// 95% intervals for perplexity and for paired differences between two runs, by the
// percentile bootstrap over evaluation windows.
//
// A window (or memory segment) is the resampling unit: its tokens share context, so
// resampling single tokens would understate the spread. The statistic of each resample is
// the ratio estimator sum(NLL) / sum(tokens) over the drawn windows, exactly how perplexity
// itself is computed. Draws use a fixed-seed SplitMix64 generator and plain modulo, so the
// same inputs give the same interval on every platform.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/eval/evaluate.h"

namespace txl {

struct BootstrapOptions {
  int64_t resamples = 1000;
  uint64_t seed = 20240917;
  double level = 0.95;
};

// Describes the method in words and as JSON, for outputs that state how intervals were made.
std::string describe(const BootstrapOptions& options);
nlohmann::json to_json(const BootstrapOptions& options);

struct Interval {
  bool valid = false;  // false with fewer than 2 windows: no spread to resample
  double lo = 0.0;
  double hi = 0.0;
};

// Interval for mean NLL per token; exp() of its ends is the perplexity interval.
Interval mean_nll_interval(const EvalResult& result, const BootstrapOptions& options = {});

struct PairedDifference {
  int64_t tokens = 0;
  int64_t windows = 0;
  double mean_diff = 0.0;  // mean NLL per token of a minus that of b (nats; < 0: a is better)
  Interval diff;           // interval for mean_diff; exp() gives the ppl ratio a / b
  double ppl_ratio() const;
};

// a and b must come from the same request on the same tokens (identical window_tokens);
// otherwise std::invalid_argument. Both runs are resampled with the same window indices.
PairedDifference paired_difference(const EvalResult& a, const EvalResult& b,
                                   const BootstrapOptions& options = {});

}  // namespace txl
