// txl bench --config F [--set key=value ...] [--steps N] [--warmup W] [--json FILE] [--profile]
//           [--threads T] [--precision P] [--device D] [--vocab N] [--long-length L]
// Training and evaluation throughput on random tokens, FLOPs per token, MFU against the measured
// GEMM peak, and one long evaluation window per encoding, each in a fresh process so one
// encoding's peak memory cannot mask another's; --eval-only: bench_eval_options.h.
#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>

#include "txl/cli/bench_eval_options.h"
#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/cli/output_path.h"
#include "txl/config/adaptive.h"
#include "txl/config/encodings.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/protocol.h"
#include "txl/eval/request.h"
#include "txl/platform/device.h"
#include "txl/platform/process.h"
#include "txl/platform/resources.h"
#include "txl/train/bench.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

struct BenchCommandOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string json_path;
  std::string precision;           // empty: train.precision
  std::string device;              // empty: train.device
  std::optional<int64_t> threads;  // unset: train.threads (0 = all cores)
  int64_t steps = 20;
  int64_t warmup = 3;
  int64_t vocab = 10000;
  int64_t long_length = 4096;
  int64_t long_passes = 2;
  std::string encodings;   // "all" or a comma list: step time of each, side by side
  int64_t rounds = 1;      // --encodings: --steps per round, steps of all encodings in turn
  bool long_only = false;  // child mode: only the long window, result to --json
  bool profile = false;
  EvalBenchCliOptions eval;  // --eval-only and its options
};

const char* const kNoCorpus = "(none: txl bench uses random tokens)";

Config resolve_config(const BenchCommandOptions& o) {
  if (o.config_path.empty()) throw InputError("txl bench needs --config FILE");
  auto j = read_json_file(o.config_path);
  // No corpus is read, so a config without data.dir is fine here.
  nlohmann::json given = j;
  for (const auto& assignment : o.overrides) apply_override(given, assignment);
  if (given.is_object() && (!given.contains("data") || !given["data"].contains("dir")))
    j["data"]["dir"] = kNoCorpus;
  // The flags win over --set, as before; check_options has checked their values.
  std::vector<std::string> overrides = o.overrides;
  if (o.threads) overrides.push_back("train.threads=" + std::to_string(*o.threads));
  if (!o.precision.empty()) overrides.push_back("train.precision=" + o.precision);
  if (!o.device.empty()) overrides.push_back("train.device=" + o.device);
  const Config config = config_with_overrides(j, overrides, o.config_path);
  resolve_device(config.train.device, "train.device");
  return config;
}

std::vector<PosEncoding> chosen_encodings(const std::string& list) {
  std::vector<PosEncoding> out;
  if (list == "all") {
    for (const auto& t : encoding_registry()) out.push_back(t.id);
    return out;
  }
  for (const auto& name : split(list, ',')) {
    const PosEncoding encoding = parse_pos_encoding(name, "--encodings");
    if (std::find(out.begin(), out.end(), encoding) != out.end()) {
      throw InputError("--encodings " + list + ": " + name + " is given twice; list each once");
    }
    out.push_back(encoding);
  }
  return out;
}

// The config's shape with `encoding` at its defaults, and the keys only other encodings read
// at theirs; without memory for an encoding that has none.
Config with_encoding(const Config& base, PosEncoding encoding) {
  Config c = base;
  c.model.pos_encoding = encoding;
  c.model.encoding_options.clear();
  const ModelConfig defaults;
  const EncodingTraits& traits = encoding_traits(encoding);
  if (!traits.uses_clamp_len) c.model.clamp_len = defaults.clamp_len;
  if (!traits.uses_max_rel_dist) c.model.max_rel_dist = defaults.max_rel_dist;
  if (!traits.takes_memory) c.train.mem_len = 0;
  return c;
}

// with_encoding without memory, as --encodings times each encoding; checked like any config
// (a learned table shorter than train.tgt_len is refused) before the first one is timed.
Config encoding_bench_config(const Config& base, PosEncoding encoding) {
  Config c = with_encoding(base, encoding);
  c.train.mem_len = 0;
  try {
    validate(c);
  } catch (const InputError& e) {
    throw InputError("--encodings: " + to_string(encoding) +
                     " at this config's shape: " + e.what());
  }
  return c;
}

void check_options(const BenchCommandOptions& o) {
  if (o.steps < 1) throw InputError("--steps must be >= 1, got " + std::to_string(o.steps));
  if (o.warmup < 0) throw InputError("--warmup must be >= 0, got " + std::to_string(o.warmup));
  if (o.vocab < 2) throw InputError("--vocab must be >= 2, got " + std::to_string(o.vocab));
  if (o.long_length < 0)
    throw InputError("--long-length must be >= 0, got " + std::to_string(o.long_length));
  if (o.long_passes < 1)
    throw InputError("--long-passes must be >= 1, got " + std::to_string(o.long_passes));
  if (!o.precision.empty()) parse_precision(o.precision, "--precision");
  if (!o.encodings.empty()) chosen_encodings(o.encodings);
  if (o.rounds < 1) throw InputError("--rounds must be >= 1, got " + std::to_string(o.rounds));
  if (o.steps > std::numeric_limits<int64_t>::max() / o.rounds) {
    throw InputError("--rounds " + std::to_string(o.rounds) + " x --steps " +
                     std::to_string(o.steps) + " timed steps per encoding is too many to count");
  }
  if (o.threads) check_threads(*o.threads, "--threads");
  if (!o.device.empty()) resolve_device(o.device, "--device");
  check_output_path(o.json_path, "--json");
}

// The long window of `config` (with_encoding of the bench's), measured by a child `txl bench
// --long-only` that reads it from a temporary file.
LongWindowResult long_window_in_child(const BenchCommandOptions& o, const Config& config,
                                      int threads) {
  const auto stem =
      std::filesystem::temp_directory_path() /
      fmt::format("txl-bench-{}-{}", ::getpid(), to_string(config.model.pos_encoding));
  const std::string out = stem.string() + ".json", child_config = stem.string() + ".config.json";
  write_file_atomic(child_config, config_to_json(config).dump(2) + "\n");
  std::vector<std::string> argv = {self_executable(), "bench", "--config", child_config};
  argv.insert(argv.end(),
              {"--threads", std::to_string(threads), "--precision",
               to_string(config.train.precision), "--device", config.train.device, "--vocab",
               std::to_string(o.vocab), "--long-length", std::to_string(o.long_length),
               "--long-passes", std::to_string(o.long_passes), "--long-only", "--json", out});
  const int rc = run_process(argv);
  std::filesystem::remove(child_config);
  if (rc != 0) {
    throw std::runtime_error(fmt::format("long-window child for {} exited with code {}{}",
                                         to_string(config.model.pos_encoding), rc,
                                         rc == 137 ? " (killed: out of memory?)" : ""));
  }
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(out);
  return LongWindowResult::from_json(j.at("long_window"));
}

// Every chosen encoding at the same shape, in this process, their steps taken in turn:
// median and fastest training step, their ratios to absolute's (when absolute is among them)
// and evaluation time. Memory is off for all (absolute has none), so every encoding attends
// over tgt_len keys.
int run_encodings_bench(const BenchCommandOptions& o, const Config& base) {
  BenchOptions options;
  options.vocab_size = o.vocab;
  options.steps = o.steps;
  options.warmup = o.warmup;
  const auto encodings = chosen_encodings(o.encodings);
  std::vector<Config> configs;
  for (const auto encoding : encodings) configs.push_back(encoding_bench_config(base, encoding));
  check_bench_memory(configs, o.vocab, "--encodings " + o.encodings);
  fmt::print(stderr, "bench {}: {} x {} steps each, one step of each encoding in turn ...\n",
             o.encodings, o.rounds, o.steps);
  const auto results = run_interleaved_bench(configs, options, o.rounds);
  // Ratios between medians (and between fastest steps): the steps of all encodings were
  // taken in turn, so a burst of other work on the machine falls on all of them alike.
  const BenchResult* absolute = nullptr;
  for (const auto& r : results) {
    if (r.pos_encoding == "absolute") absolute = &r;
  }
  const auto& m = base.model;
  fmt::print(
      "encodings    {} layers, d_model {}, {} heads x {}, batch {} x tgt_len {}, no memory, "
      "{}, {} threads, {} steps each after {} warm-up, one step of each encoding in turn\n",
      m.n_layer, m.d_model, m.n_head, m.d_head, base.train.batch_size, base.train.tgt_len,
      results.empty() ? "" : results[0].precision, results.empty() ? 0 : results[0].threads,
      o.steps * o.rounds, o.warmup);
  fmt::print("cpu          {}\n", results.empty() ? "" : results[0].cpu_model);
  if (!results.empty() && results[0].device != "cpu")
    fmt::print("device       {}\n", results[0].device);
  fmt::print("  {:<18} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}\n", "encoding", "median ms",
             "fastest ms", "x absolute", "(fastest)", "tok/s", "eval ms", "parameters");
  auto rows = nlohmann::json::array();
  for (const auto& r : results) {
    auto j = r.to_json();
    std::string ratio = "-", fastest_ratio = "-";
    if (absolute != nullptr) {
      const double median = r.step_ms.median_ms / absolute->step_ms.median_ms;
      const double fastest = r.step_ms.min_ms / absolute->step_ms.min_ms;
      ratio = fmt::format("{:.3f}", median);
      fastest_ratio = fmt::format("{:.3f}", fastest);
      j["ratio_to_absolute"] = median;
      j["fastest_ratio_to_absolute"] = fastest;
    }
    fmt::print("  {:<18} {:>10.1f} {:>10.1f} {:>10} {:>10} {:>10.0f} {:>12.1f} {:>12}\n",
               r.pos_encoding, r.step_ms.median_ms, r.step_ms.min_ms, ratio, fastest_ratio,
               r.median_step_tokens_per_s(), r.eval_ms_per_pass, r.parameters);
    rows.push_back(j);
  }
  fmt::print("load average {:.2f} (1 min; other work on the machine skews every number above)\n",
             results.empty() ? 0.0 : results.back().load_average);
  write_json_output(o.json_path, {{"encodings", rows}});
  return 0;
}

// What a protocol's row of the bench measured, as `txl eval` would be asked for it.
std::string eval_rate_setting(const EvalRate& e, const BenchResult& r) {
  if (e.setting == "-") return fmt::format("L {}, {} windows a pass", r.query_len, r.batch);
  return fmt::format("L {}, {}", r.query_len, e.setting);
}

// The bench's table: shapes, train and eval timings, memory, FLOPs and MFU, the profile.
void print_bench(const BenchResult& r, const Config& config, bool profile) {
  const auto& m = config.model;

  fmt::print(
      "bench        {} | {} layers, d_model {}, {} heads x {}, d_inner {} | vocab {} | {} "
      "parameters\n",
      r.pos_encoding, m.n_layer, m.d_model, m.n_head, m.d_head, m.d_inner, r.vocab_size,
      r.parameters);
  fmt::print("cpu          {} | {} | bf16 {}\n", r.cpu_model, r.cpu_flags, r.bf16_support);
  if (r.device != "cpu") fmt::print("device       {}\n", r.device);
  fmt::print(
      "shape        batch {} x tgt_len {}, mem_len {} | {} | {} threads | {} steps after {} "
      "warm-up\n",
      r.batch, r.query_len, r.mem_len, r.precision, r.threads, r.steps, r.warmup);
  fmt::print(
      "train        {:8.1f} ms/step | {:8.0f} tok/s | median {:.1f}, fastest {:.1f} ms/step | cpu "
      "{:.1f} ms/step | forward {:.1f}, backward {:.1f}, clip {:.1f}, optimizer {:.1f} ms\n",
      r.ms_per_step, r.train_tokens_per_s, r.step_ms.median_ms, r.step_ms.min_ms, r.cpu_ms_per_step,
      r.phases.forward_ms, r.phases.backward_ms, r.phases.clip_ms, r.phases.optimizer_ms);
  for (const auto& e : r.eval_rates) {
    fmt::print(
        "eval {:<10} {:8.0f} tok/s | {:.2f}x training (median step) | {} passes, median {:.1f} ms, "
        "fastest {:.1f} of {} evaluations | {}\n",
        e.method, e.tokens_per_s, e.ratio_to_train, e.passes, e.ms.median_ms, e.ms.min_ms,
        e.ms.count, eval_rate_setting(e, r));
  }
  fmt::print("memory       peak RSS {:.0f} MB\n", r.peak_rss_mb);
  fmt::print("flops/token  train {:.2f} M, eval {:.2f} M; {}\n", r.flops.train_per_token / 1e6,
             r.flops.eval_per_token / 1e6, r.flops.formula);
  fmt::print(
      "achieved     train {:.1f} GFLOP/s, eval {:.1f} GFLOP/s | GEMM peak {} {:.1f} GFLOP/s "
      "({}^3, best of LibTorch and oneDNN) | MFU train {:.1f}% (median step {:.1f}%, fastest "
      "{:.1f}%), eval {:.1f}%\n",
      r.achieved_gflops, r.eval_achieved_gflops, r.precision, r.gemm_peak_gflops, r.gemm_peak_n,
      100.0 * r.mfu, 100.0 * r.mfu_median_step, 100.0 * r.mfu_fastest_step, 100.0 * r.eval_mfu);
  fmt::print("load average {:.2f} (1 min; other work on the machine skews every number above)\n",
             r.load_average);
  if (profile) {
    fmt::print(
        "\nper-operator time over the {} timed steps ({:.0f} ms wall; profiler overhead "
        "included):\n{}",
        r.steps, r.profiled_ms, format_op_table(r.profile, r.profiled_ms, 30));
    fmt::print("\nthe same time by (operator <- caller):\n{}",
               format_op_table(r.profile_by_caller, r.profiled_ms, 40));
    if (!r.eval_profile.empty()) {
      fmt::print("\nper-operator time of one evaluation ({} protocol, {:.0f} ms wall):\n{}",
                 r.primary_method, r.eval_profiled_ms,
                 format_op_table(r.eval_profile, r.eval_profiled_ms, 25));
      fmt::print("\nthe same time by (operator <- caller):\n{}",
                 format_op_table(r.eval_profile_by_caller, r.eval_profiled_ms, 25));
    }
  }
}

// Why the long window of `c` is not measured ("" when it is): a config its encoding refuses
// at its defaults (a learned table shorter than train.tgt_len), or a window past its table.
std::string long_window_skipped(const Config& c, int64_t length) {
  try {
    validate(c);
  } catch (const InputError& e) {
    return e.what();
  }
  // A learned table has no rows for such a window (n/a in txl eval too).
  return window_past_table(c.model, length);
}

// Every long window the bench will measure fits in memory, by evaluation's estimate (one
// window of --long-length tokens), before anything is timed: a length too long for the
// machine is exit 2 with the estimate, not an allocation failure in a child.
void check_long_windows_fit(const BenchCommandOptions& o, const Config& config) {
  if (o.long_length <= 0) return;
  std::vector<Config> measured;
  if (o.long_only) measured.push_back(config);
  for (const auto& traits : encoding_registry()) {
    if (o.long_only) break;
    Config c = with_encoding(config, traits.id);
    if (long_window_skipped(c, o.long_length).empty()) measured.push_back(std::move(c));
  }
  const double available = available_ram_bytes();
  const EvalRequest r = make_eval_request(EvalSettings{}, o.long_length, o.long_length);
  for (const Config& c : measured) {
    try {
      check_eval_footprint(estimate_eval_footprint(c.model, o.vocab, r, o.long_length), r,
                           available);
    } catch (const InputError& e) {
      throw InputError("--long-length " + std::to_string(o.long_length) + " (" +
                       to_string(c.model.pos_encoding) + "): " + e.what());
    }
  }
}

// Each encoding's long window, each in a fresh process, printed and as JSON rows.
nlohmann::json long_window_rows(const BenchCommandOptions& o, const Config& config,
                                const BenchResult& r) {
  fmt::print("\nlong window  L = {}, batch 1, no memory, {} (each encoding in a fresh process)\n",
             o.long_length, r.precision);
  fmt::print("  {:<18} {:>10} {:>10} {:>14} {:>12}\n", "encoding", "ms", "tok/s", "peak RSS MB",
             "growth MB");
  auto rows = nlohmann::json::array();
  for (const auto& traits : encoding_registry()) {
    const Config c = with_encoding(config, traits.id);  // the child runs it at its defaults
    const std::string skipped = long_window_skipped(c, o.long_length);
    if (!skipped.empty()) {
      fmt::print("  {:<18} {:>10}   ({})\n", traits.name, "n/a", skipped);
      rows.push_back(
          {{"pos_encoding", traits.name}, {"length", o.long_length}, {"skipped", skipped}});
      continue;
    }
    const auto w = long_window_in_child(o, c, r.threads);
    fmt::print("  {:<18} {:>10.1f} {:>10.0f} {:>14.0f} {:>12.0f}\n", w.pos_encoding, w.eval_ms,
               w.tokens_per_s, w.peak_rss_mb, w.growth_mb);
    rows.push_back(w.to_json());
  }
  return rows;
}

int run_bench_command(const BenchCommandOptions& o) {
  check_options(o);
  const Config config = resolve_config(o);
  validate_adaptive_vocab(config.model.adaptive, o.vocab);  // cutoffs below --vocab
  if (o.eval.eval_only)
    return run_eval_bench_command(config, o.eval, o.vocab, o.profile, o.json_path);
  if (!o.encodings.empty()) return run_encodings_bench(o, config);
  check_long_windows_fit(o, config);

  if (o.long_only) {
    const auto r = run_long_window(config, o.vocab, o.long_length, static_cast<int>(o.long_passes));
    write_json_output(o.json_path, {{"long_window", r.to_json()}});
    if (o.json_path.empty()) fmt::print("{}\n", r.to_json().dump());
    return 0;
  }

  BenchOptions options;
  options.vocab_size = o.vocab;
  options.steps = o.steps;
  options.warmup = o.warmup;
  options.profile = o.profile;
  check_bench_memory({config}, o.vocab, o.config_path);
  const auto r = run_bench(config, options);
  print_bench(r, config, o.profile);
  auto j = r.to_json();
  if (o.long_length > 0) j["long_window"] = long_window_rows(o, config, r);
  write_json_output(o.json_path, j);
  return 0;
}

}  // namespace

void setup_bench(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<BenchCommandOptions>();
  auto* cmd = app.add_subcommand(
      "bench", "Training/evaluation speed, FLOPs and MFU of a config's model on random tokens");
  cmd->add_option("--config,-c", c->config_path, "JSON config (data.dir is not read)")->required();
  cmd->add_option("--set", c->overrides,
                  "Override one key, e.g. --set model.pos_encoding=absolute");
  cmd->add_option("--steps", c->steps, "Timed training steps and evaluation passes")
      ->capture_default_str();
  cmd->add_option("--warmup", c->warmup, "Untimed training steps first")->capture_default_str();
  cmd->add_option("--json", c->json_path, "Write the results as JSON to this file");
  cmd->add_option("--threads", c->threads,
                  "Threads, 0 to 1024 (0 = all cores; default train.threads)");
  cmd->add_option("--precision", c->precision, "fp32 or bf16 (default train.precision)");
  cmd->add_option("--device", c->device,
                  "cpu, cuda, cuda:N or auto (cuda:0 if there is one; default train.device)");
  cmd->add_option("--vocab", c->vocab, "Vocabulary size of the random tokens")
      ->capture_default_str();
  cmd->add_option("--long-length", c->long_length, "Long evaluation window per encoding (0 = skip)")
      ->capture_default_str();
  cmd->add_option("--long-passes", c->long_passes, "Passes over the long window (time: best)")
      ->capture_default_str();
  cmd->add_option("--encodings", c->encodings,
                  "all or a comma list: the training step of each encoding at this shape (no "
                  "memory), side by side with its ratio to absolute");
  cmd->add_option("--rounds", c->rounds,
                  "--encodings: rounds of --steps timed steps per encoding, one step of each "
                  "encoding in turn")
      ->capture_default_str();
  cmd->add_flag("--long-only", c->long_only,
                "Only the long window of the config's encoding, in this process");
  cmd->add_flag("--profile", c->profile, "Per-operator time table of the timed training steps");
  add_eval_bench_options(cmd, c->eval);
  cmd->callback([c, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    refuse_without_eval_only(*cmd, c->eval.eval_only);
    exit_code = run_bench_command(*c);
  });
}

}  // namespace txl
