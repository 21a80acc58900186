// txl bench --eval-only: how fast a config's model evaluates by one protocol at one length, on
// random tokens, with nothing of training's size allocated (no optimizer, no gradients, no
// training step), so that a user can time an evaluation such as the published WikiText-103
// layout's at memory 1600 before committing hours to it.
//
// FLOPs per scored token: bench.h's evaluation formula for each pass (its rows, its length and
// the memory it reads), summed over the plan's passes and divided by the tokens scored, so a
// protocol that forwards more than it scores (sliding) is charged for it. Relative's W_r R is
// charged only when it is computed: evaluation keeps it for a key count an earlier pass
// projected, where it fits (model/encodings/relative.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/request.h"
#include "txl/platform/op_profile.h"
#include "txl/train/bench.h"

namespace txl {

struct EvalBenchOptions {
  int64_t vocab_size = 10000;  // random ids in [0, vocab_size) (Zipf's for adaptive runs)
  EvalSettings settings;       // protocol, its settings, clamp_len, precision
  int64_t length = 0;          // L; 0: the config's train.tgt_len
  int64_t tokens = 0;          // scored per evaluation; 0: 8 segments of L per stream
  int64_t repeats = 3;         // timed evaluations after one untimed (warm-up) pass
  bool profile = false;        // per-operator table of one more evaluation
  double progress_seconds = 5.0;
};

struct EvalBenchResult {
  std::string device, cpu_model, cpu_flags, precision, pos_encoding;
  int threads = 0;
  int64_t parameters = 0, vocab_size = 0, length = 0, tokens = 0, passes = 0;
  std::string protocol, setting;  // as txl eval reports them
  TimingStats ms;                 // one evaluation, over the repeats
  double tokens_per_s = 0.0;      // tokens / median
  double flops_per_token = 0.0;   // per scored token (above)
  double achieved_gflops = 0.0, gemm_peak_gflops = 0.0, mfu = 0.0;
  double peak_rss_mb = 0.0, load_average = 0.0;
  std::vector<OpTime> profile, profile_by_caller;
  double profiled_ms = 0.0;

  nlohmann::json to_json() const;
};

// The config's model (train.threads, device; seeded as training seeds it), evaluated on random
// tokens by o.settings at o.length: one untimed evaluation, then o.repeats timed ones.
EvalBenchResult run_eval_bench(const Config& config, const EvalBenchOptions& o);

}  // namespace txl
