// txl bench --eval-only: the options that time one evaluation protocol alone (train/eval_bench.h),
// registered on txl bench, and the command's run.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "txl/cli/eval_options.h"
#include "txl/config/config.h"

namespace txl {

struct EvalBenchCliOptions {
  bool eval_only = false;
  EvalCliOptions eval;  // --method and the protocols' settings (txl eval's)
  std::optional<int64_t> clamp_len;
  int64_t length = 0;  // 0: train.tgt_len
  int64_t tokens = 0;  // 0: eval_bench.h's default
  int64_t repeats = 3;
};

void add_eval_bench_options(CLI::App* cmd, EvalBenchCliOptions& o);
// --eval-only's own options given without it, or training's with it: InputError naming both.
void refuse_without_eval_only(const CLI::App& cmd, bool eval_only);

// Checks the options (InputError naming the flag), runs the bench, prints it and writes `json_path`
// when given. `precision` is the config's (bench's --precision is applied to it already).
int run_eval_bench_command(const Config& config, const EvalBenchCliOptions& o, int64_t vocab,
                           bool profile, const std::string& json_path);

}  // namespace txl
