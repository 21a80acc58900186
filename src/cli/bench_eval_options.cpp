// txl bench --eval-only (bench_eval_options.h).
#include "txl/cli/bench_eval_options.h"

#include <spdlog/fmt/fmt.h>

#include "txl/eval/protocol.h"
#include "txl/train/eval_bench.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

EvalBenchOptions checked_options(const Config& config, const EvalBenchCliOptions& o, int64_t vocab,
                                 bool profile) {
  EvalBenchOptions b;
  b.vocab_size = vocab;
  b.profile = profile;
  b.settings.protocol = parse_protocol_name(o.eval.method, "--method");
  b.settings.protocol_settings = given_protocol_settings(o.eval, b.settings.protocol);
  b.settings.precision = config.train.precision;
  if (o.clamp_len && *o.clamp_len < 0)
    throw InputError(
        fmt::format("--clamp-len {} is not valid; expected >= 0 (0 = no cap)", *o.clamp_len));
  b.settings.clamp_len = o.clamp_len.value_or(-1);
  if (o.length < 0) throw InputError(fmt::format("--length must be >= 0, got {}", o.length));
  if (o.tokens < 0) throw InputError(fmt::format("--tokens must be >= 0, got {}", o.tokens));
  if (o.repeats < 1) throw InputError(fmt::format("--repeats must be >= 1, got {}", o.repeats));
  b.length = o.length;
  b.tokens = o.tokens;
  b.repeats = o.repeats;
  return b;
}

void print_eval_bench(const EvalBenchResult& r) {
  fmt::print("txl bench --eval-only | {} | {} threads | {} | {} | {} | {} parameters | vocab {}\n",
             r.cpu_model, r.threads, r.device, r.precision, r.pos_encoding, r.parameters,
             r.vocab_size);
  fmt::print("method {} ({}) at L = {}: {} tokens scored in {} passes\n", r.protocol, r.setting,
             r.length, r.tokens, r.passes);
  fmt::print("evaluation: median {:.0f} ms, fastest {:.0f} ms over {} -> {:.0f} tok/s\n",
             r.ms.median_ms, r.ms.min_ms, r.ms.count, r.tokens_per_s);
  fmt::print(
      "{:.3g} FLOPs per scored token, {:.1f} GFLOP/s = {:.1f}% of the fp32 GEMM peak "
      "measured in this run ({:.1f} GFLOP/s)\n",
      r.flops_per_token, r.achieved_gflops, 100.0 * r.mfu, r.gemm_peak_gflops);
  fmt::print("peak RSS {:.0f} MB; load average {:.2f} (1 min; other work skews every number)\n",
             r.peak_rss_mb, r.load_average);
  if (!r.profile.empty()) {
    fmt::print("\nper-operator time of one more evaluation ({:.0f} ms wall):\n{}", r.profiled_ms,
               format_op_table(r.profile, r.profiled_ms, 25));
    fmt::print("\nthe same time by (operator <- caller):\n{}",
               format_op_table(r.profile_by_caller, r.profiled_ms, 25));
  }
}

}  // namespace

// --eval-only's own options given without it, or training's with it: InputError naming both.
void refuse_without_eval_only(const CLI::App& cmd, bool eval_only) {
  std::vector<std::string> eval_only_flags = {"--method", "--clamp-len", "--length", "--tokens",
                                              "--repeats"};
  for (const auto& protocol : eval_protocols())
    for (const auto& s : protocol.settings) eval_only_flags.push_back(s.flag);
  static const std::vector<std::string> training_flags = {"--steps", "--warmup", "--encodings",
                                                          "--rounds", "--long-only"};
  for (const auto& flag : eval_only ? training_flags : eval_only_flags) {
    if (cmd.count(flag) == 0) continue;
    throw InputError(
        eval_only
            ? flag + " times training, which --eval-only leaves out; leave " + flag + " out"
            : flag + " applies with --eval-only only; add --eval-only or leave " + flag + " out");
  }
}

void add_eval_bench_options(CLI::App* cmd, EvalBenchCliOptions& o) {
  cmd->add_flag("--eval-only", o.eval_only,
                "Time evaluation alone (no training step, no optimizer): one --method at one "
                "--length, with that method's settings (--mem-len, --streams, --same-length, ...)");
  cmd->add_option("--method", o.eval.method,
                  "--eval-only: " + join(eval_protocol_names(), " | ") + " (default " +
                      default_protocol_name() + ")");
  add_protocol_setting_options(cmd, o.eval);
  cmd->add_option("--clamp-len", o.clamp_len,
                  "--eval-only: relative distance cap, >= 0 (default model.clamp_len)");
  cmd->add_option("--length", o.length,
                  "--eval-only: the window or segment L (default train.tgt_len)");
  cmd->add_option("--tokens", o.tokens,
                  "--eval-only: tokens scored per evaluation (default: 8 passes with full memory)");
  cmd->add_option("--repeats", o.repeats, "--eval-only: timed evaluations after one untimed")
      ->capture_default_str();
}

int run_eval_bench_command(const Config& config, const EvalBenchCliOptions& o, int64_t vocab,
                           bool profile, const std::string& json_path) {
  const EvalBenchOptions options = checked_options(config, o, vocab, profile);
  const EvalBenchResult r = run_eval_bench(config, options);
  print_eval_bench(r);
  write_json_output(json_path, r.to_json());
  return 0;
}

}  // namespace txl
