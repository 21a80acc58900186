// End-to-end tests of `txl bench` (TXL_BINARY) on a tiny config: the JSON report has every
// documented field with sane values, the FLOP count follows the stated formula, and bad
// options are usage errors.
#include "txl/train/bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/config/encodings.h"
#include "txl/platform/cpu.h"
#include "txl/platform/resources.h"
#include "txl/train/footprint_estimate.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using testing::CliResult;
using testing::read_text;
using testing::run_txl;
using testing::scratch_dir;
using testing::write_text;

// 1 layer, d_model 16 = 2 heads x 8, d_inner 32; batch 2 x 8 tokens with 8 of memory.
// No data.dir: bench reads no corpus.
const char* const kTinyConfig = R"({
  "model": { "pos_encoding": "relative", "n_layer": 1, "d_model": 16, "n_head": 2, "d_head": 8,
             "d_inner": 32, "dropout": 0.1 },
  "train": { "tgt_len": 8, "mem_len": 8, "batch_size": 2 }
})";
constexpr double kVocab = 50;

std::string tiny_config(const std::string& dir) {
  const std::string path = dir + "/tiny.json";
  write_text(path, kTinyConfig);
  return path;
}

// One `txl bench` run on the tiny config with --json: what it printed and the JSON it wrote.
struct BenchRun {
  CliResult cli;
  nlohmann::json json;
};

// Runs bench with `args`; nothing (after a test failure) when it did not exit 0.
std::optional<BenchRun> run_bench_json(const std::string& name, std::vector<std::string> args,
                                       const std::vector<std::string>& env = {}) {
  const auto dir = scratch_dir(name);
  const auto json_path = dir + "/bench.json";
  args.insert(args.begin(), {"bench", "--config", tiny_config(dir)});
  args.insert(args.end(), {"--json", json_path});
  BenchRun run;
  run.cli = run_txl(args, env);
  EXPECT_EQ(run.cli.code, 0) << run.cli.out << run.cli.err;
  if (run.cli.code != 0) return std::nullopt;
  run.json = nlohmann::json::parse(read_text(json_path));
  return run;
}

void expect_positive(const nlohmann::json& j, const std::string& key) {
  ASSERT_TRUE(j.contains(key)) << "missing key " << key << " in " << j.dump();
  ASSERT_TRUE(j.at(key).is_number()) << key << " = " << j.at(key);
  const double v = j.at(key).get<double>();
  EXPECT_TRUE(std::isfinite(v) && v > 0) << key << " = " << v;
}

TEST(Bench, JsonHasEveryFieldPositiveAndOneLongWindowPerEncoding) {
  const auto bench = run_bench_json("bench", {"--steps", "2", "--warmup", "1", "--vocab", "50",
                                              "--threads", "1", "--long-length", "32"});
  ASSERT_TRUE(bench.has_value());
  const auto& j = bench->json;
  EXPECT_EQ(j.at("precision"), "fp32");
  EXPECT_EQ(j.at("threads"), 1);
  for (const auto* key : {"threads", "train_tokens_per_s", "eval_tokens_per_s", "ms_per_step",
                          "peak_rss_mb", "flops_per_token", "achieved_gflops", "gemm_peak_gflops",
                          "mfu", "eval_flops_per_token", "parameters"}) {
    expect_positive(j, key);
  }
  // Self-consistency: the reported rates follow from one another.
  const double tokens_per_step = 2 * 8;
  EXPECT_NEAR(j.at("train_tokens_per_s").get<double>(),
              tokens_per_step / (j.at("ms_per_step").get<double>() / 1000.0),
              1e-6 * j.at("train_tokens_per_s").get<double>());
  EXPECT_NEAR(j.at("mfu").get<double>(),
              j.at("achieved_gflops").get<double>() / j.at("gemm_peak_gflops").get<double>(), 1e-9);
  EXPECT_EQ(j.at("gemm_peak_n"), 1024);  // on the CPU; 8192 on a GPU
  EXPECT_NE(j.at("flops_formula").get<std::string>().find("6*(N + attn + pos)"), std::string::npos);

  ASSERT_TRUE(j.contains("long_window") && j.at("long_window").is_array()) << j.dump();
  ASSERT_EQ(j.at("long_window").size(), encoding_registry().size());
  std::vector<std::string> encodings;
  for (const auto& w : j.at("long_window")) {
    encodings.push_back(w.at("pos_encoding").get<std::string>());
    EXPECT_EQ(w.at("length"), 32);
    if (w.contains("skipped")) continue;  // none at 32: every table is longer
    expect_positive(w, "eval_ms");
    expect_positive(w, "peak_rss_mb");
    EXPECT_GE(w.at("growth_mb").get<double>(), 0.0);
  }
  EXPECT_EQ(encodings, encoding_names());
  // The human-readable report states the formula too.
  EXPECT_NE(bench->cli.out.find("flops/token"), std::string::npos) << bench->cli.out;
}

// Each protocol is timed as `txl eval` runs it at L = tgt_len over batch x tgt_len x steps
// tokens: nonoverlap, sliding (stride L/2: twice the passes) and memory; the rates follow
// from the median times, and the step statistics from the step times.
TEST(Bench, EvalProtocolsAndStepStatisticsFollowFromTheTimings) {
  const auto bench = run_bench_json("protocols", {"--steps", "3", "--warmup", "0", "--vocab", "50",
                                                  "--threads", "1", "--long-length", "0"});
  ASSERT_TRUE(bench.has_value());
  const auto& j = bench->json;
  const auto& steps = j.at("step_times_ms");
  ASSERT_EQ(steps.size(), 3u);
  std::vector<double> times;
  for (const auto& t : steps) times.push_back(t.get<double>());
  std::sort(times.begin(), times.end());
  EXPECT_DOUBLE_EQ(j.at("step_ms").at("median_ms").get<double>(), times[1]);
  EXPECT_DOUBLE_EQ(j.at("step_ms").at("min_ms").get<double>(), times[0]);
  EXPECT_NEAR(j.at("ms_per_step").get<double>(), (times[0] + times[1] + times[2]) / 3, 1e-9);
  // MFU at the median and at the fastest step: those steps' rates over the peak.
  const double per_token = j.at("flops_per_token").get<double>();
  const double peak = j.at("gemm_peak_gflops").get<double>();
  EXPECT_NEAR(j.at("mfu_median_step").get<double>(), per_token * 16 / times[1] / 1e6 / peak, 1e-9);
  EXPECT_NEAR(j.at("mfu_fastest_step").get<double>(), per_token * 16 / times[0] / 1e6 / peak, 1e-9);

  const auto& rates = j.at("eval_protocols");
  ASSERT_EQ(rates.size(), 3u) << rates.dump();
  const double train_rate = 2 * 8 / (times[1] / 1000.0);
  const std::vector<std::string> methods = {"nonoverlap", "sliding", "memory"};
  // sliding: 48 targets = 8 (the first window) + 10 windows x 4, 2 windows a pass
  const std::vector<int> passes = {3, 6, 3};
  for (size_t p = 0; p < rates.size(); ++p) {
    const auto& rate = rates[p];
    EXPECT_EQ(rate.at("method"), methods[p]);
    EXPECT_EQ(rate.at("tokens"), 2 * 8 * 3);
    EXPECT_EQ(rate.at("passes"), passes[p]) << rate.dump();
    EXPECT_EQ(rate.at("ms").at("count"), 3);
    const double median = rate.at("ms").at("median_ms").get<double>();
    EXPECT_NEAR(rate.at("tokens_per_s").get<double>(), 48 / (median / 1000.0), 1e-6 * 48e3);
    EXPECT_NEAR(rate.at("ratio_to_train").get<double>(),
                rate.at("tokens_per_s").get<double>() / train_rate, 1e-9);
    EXPECT_NE(bench->cli.out.find("eval " + methods[p]), std::string::npos) << bench->cli.out;
  }
  // The headline eval figures are the memory protocol's (the model carries memory).
  EXPECT_DOUBLE_EQ(j.at("eval_tokens_per_s").get<double>(),
                   rates[2].at("tokens_per_s").get<double>());
}

// --profile: the operator tables of the timed training steps and of one evaluation by the
// memory protocol, in the report and the JSON; the model's products are among the rows
// (LibTorch's, or the layers' on oneDNN, txl::affine).
TEST(Bench, ProfileCoversTrainingAndOneEvaluation) {
  const auto bench =
      run_bench_json("profile", {"--steps", "2", "--warmup", "1", "--vocab", "50", "--threads", "1",
                                 "--long-length", "0", "--profile"});
  ASSERT_TRUE(bench.has_value());
  for (const auto* key : {"profile", "eval_profile"}) {
    ASSERT_TRUE(bench->json.contains(key)) << key;
    const auto& p = bench->json.at(key);
    expect_positive(p, "profiled_ms");
    bool has_product = false;
    for (const auto& op : p.at("ops")) {
      EXPECT_GE(op.at("calls").get<int64_t>(), 1) << op.dump();
      EXPECT_GE(op.at("self_ms").get<double>(), 0.0) << op.dump();
      const auto name = op.at("name").get<std::string>();
      has_product =
          has_product || name == "aten::mm" || name == "aten::addmm" || name == "txl::affine";
    }
    EXPECT_TRUE(has_product) << key << ": " << p.dump();
  }
  // txl's own kernels are named, not left "outside any operator": in evaluation, and in
  // training, where their forwards run inside no operator and no autograd node.
  for (const auto* key : {"profile", "eval_profile"}) {
    std::vector<std::string> ops;
    for (const auto& op : bench->json.at(key).at("ops"))
      ops.push_back(op.at("name").get<std::string>());
    for (const char* own : {"txl::fused_attention", "txl::token_nll"}) {
      EXPECT_NE(std::find(ops.begin(), ops.end(), own), ops.end()) << key << ": " << own;
    }
  }
  EXPECT_NE(bench->cli.out.find("per-operator time of one evaluation (memory protocol"),
            std::string::npos)
      << bench->cli.out;
}

// The models the bench holds at once (each with its gradients and AdamW state; one step's
// activations at a time), with what the process holds, must fit in the limit: one fits under
// a limit that ten copies do not, and the refusal names the count, the need and the way out.
TEST(BenchMemory, ModelsHeldAtOnceMustFitTogether) {
  auto j = nlohmann::json::parse(kTinyConfig);
  j["data"]["dir"] = "unused";  // a config must name one; the bench reads no corpus
  const Config c = config_from_json(j, "tiny");
  const auto e = estimate_training_footprint(c, kVocab, c.train.tgt_len);
  const double states = e.weight_bytes + e.gradient_bytes + e.optimizer_bytes;
  ASSERT_GT(states, 0.0);
  // The limit is the whole process's (issue 54, cause 9): what it holds counts against it.
  const double limit_mb = current_rss_mb() + (5 * states + e.activation_bytes) / (1024.0 * 1024.0);
  ::setenv("TXL_MEMORY_LIMIT_MB", std::to_string(limit_mb).c_str(), 1);
  EXPECT_NO_THROW(check_bench_memory({c}, kVocab, "tiny.json"));
  // Ten models under a limit of two.
  testing::expect_input_error(
      [&] { check_bench_memory(std::vector<Config>(10, c), kVocab, "--encodings all"); },
      {"--encodings all: the bench holds 10 models at once", "time fewer encodings"});
  ::unsetenv("TXL_MEMORY_LIMIT_MB");
  EXPECT_NO_THROW(check_bench_memory(std::vector<Config>(10, c), kVocab, "--encodings all"));
}

// From the command line: refused with exit 2 before any model is built or step timed.
TEST(BenchMemory, TheCommandRefusesWhatDoesNotFit) {
  const auto dir = scratch_dir("bench_memory");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--encodings", "all"}, std::vector<std::string>{}}) {
    std::vector<std::string> args = {"bench", "--config", tiny_config(dir), "--long-length",
                                     "0",     "--json",   dir + "/out.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_txl(args, {"TXL_MEMORY_LIMIT_MB=0.001"});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(extra.empty() ? "the bench's model needs at least"
                                       : "the bench holds 10 models at once and needs at least"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out.find("ms/step"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir + "/out.json"));
  }
}

TEST(TimingStats, MedianMeanAndFastestOfOddEvenAndNone) {
  const auto odd = TimingStats::of({5.0, 1.0, 3.0});
  EXPECT_EQ(odd.count, 3);
  EXPECT_DOUBLE_EQ(odd.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(odd.mean_ms, 3.0);
  EXPECT_DOUBLE_EQ(odd.min_ms, 1.0);
  const auto even = TimingStats::of({4.0, 1.0, 10.0, 2.0});
  EXPECT_DOUBLE_EQ(even.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(even.mean_ms, 4.25);
  EXPECT_DOUBLE_EQ(even.min_ms, 1.0);
  EXPECT_EQ(TimingStats::of({}).count, 0);
}

// The count stated in bench.h, recomputed here for the tiny relative model:
// L=1 C=16 H=2 D=8 F=32 V=50 B=2 Q=8 M=8 K=16.
TEST(Bench, FlopsPerTokenFollowTheStatedFormula) {
  const double L = 1, C = 16, H = 2, D = 8, F = 32, V = kVocab, B = 2, Q = 8, M = 8, K = M + Q;
  const double n = L * (4 * C * H * D + 2 * C * F) + C * V;
  const double attn = L * 2 * H * D * K, pos = L * H * D * K, kv_mem = L * 2 * C * H * D * M / Q;
  const double proj = L * K * C * H * D / (B * Q);
  const double train = 6 * (n + attn + pos) + 4 * kv_mem + 4 * proj;
  const double eval = 2 * (n + attn + pos + proj);  // evaluation keeps the memory's k and v

  const auto bench = run_bench_json("flops", {"--steps", "1", "--warmup", "0", "--vocab", "50",
                                              "--threads", "1", "--long-length", "0"});
  ASSERT_TRUE(bench.has_value());
  const auto& j = bench->json;
  EXPECT_NEAR(j.at("flops_per_token").get<double>(), train, 1e-6 * train);
  EXPECT_NEAR(j.at("eval_flops_per_token").get<double>(), eval, 1e-6 * eval);
  EXPECT_NEAR(j.at("matmul_params").get<double>(), n, 1e-9);
  EXPECT_FALSE(j.contains("long_window"));
}

TEST(Bench, Bf16ReportsItsOwnPrecisionAndPeak) {
  const auto bench =
      run_bench_json("bf16", {"--steps", "2", "--warmup", "1", "--vocab", "50", "--threads", "1",
                              "--precision", "bf16", "--long-length", "0"});
  ASSERT_TRUE(bench.has_value());
  const auto& j = bench->json;
  EXPECT_EQ(j.at("precision"), "bf16");
  expect_positive(j, "train_tokens_per_s");
  expect_positive(j, "gemm_peak_gflops");
  expect_positive(j, "mfu");
  // Whatever this CPU is, the report says what bf16 runs on, and warns exactly when emulated.
  const auto plan = plan_cpu(detect_cpu_flags(), {});
  EXPECT_EQ(j.at("bf16_support"), to_string(plan.bf16));
  EXPECT_EQ(j.at("cpu_flags"), to_string(detect_cpu_flags()));
  EXPECT_EQ(bench->cli.err.find("bf16 is emulated") != std::string::npos,
            plan.bf16 == Bf16Support::kEmulated)
      << bench->cli.err;
}

TEST(Bench, Bf16OnACpuWithoutBf16InstructionsWarnsOnce) {
  const auto bench = run_bench_json("bf16-emulated",
                                    {"--steps", "2", "--warmup", "1", "--vocab", "50", "--threads",
                                     "1", "--precision", "bf16", "--long-length", "0"},
                                    {"TXL_CPU_FLAGS=avx avx2 fma"});
  ASSERT_TRUE(bench.has_value());
  const auto& err = bench->cli.err;
  const auto first = err.find("bf16 is emulated on this CPU");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("bf16 is emulated on this CPU", first + 1), std::string::npos)
      << "warned more than once:\n"
      << err;
  EXPECT_EQ(bench->json.at("bf16_support"), "emulated (no avx512_bf16, no amx_bf16)");
  EXPECT_EQ(bench->json.at("cpu_flags"), "avx avx2 fma");
}

TEST(Bench, Fp32NeverWarnsAboutBf16) {
  const auto bench = run_bench_json(
      "fp32-emulated",
      {"--steps", "1", "--warmup", "0", "--vocab", "50", "--threads", "1", "--long-length", "0"},
      {"TXL_CPU_FLAGS=avx avx2 fma"});
  ASSERT_TRUE(bench.has_value());
  EXPECT_EQ(bench->cli.err.find("bf16"), std::string::npos) << bench->cli.err;
}

TEST(Bench, EncodingsTableHasEveryEncodingAndItsRatioToAbsolute) {
  const auto run = run_bench_json("encodings", {"--encodings", "all", "--steps", "1", "--warmup",
                                                "0", "--vocab", "50", "--rounds", "2"});
  ASSERT_TRUE(run);
  const auto& rows = run->json.at("encodings");
  ASSERT_EQ(rows.size(), encoding_registry().size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at("pos_encoding"), encoding_registry()[i].name);
    EXPECT_EQ(rows[i].at("mem_len"), 0);  // the same shape for every encoding
    expect_positive(rows[i], "ms_per_step");
    // Every encoding took 2 rounds x 1 step, and its ratios are between medians and fastest.
    const auto& steps = rows[i].at("step_ms");
    EXPECT_EQ(steps.at("count"), 2);
    EXPECT_EQ(rows[i].at("step_times_ms").size(), 2u);
    const auto median = [&](size_t r) {
      return rows[r].at("step_ms").at("median_ms").get<double>();
    };
    const auto fastest = [&](size_t r) { return rows[r].at("step_ms").at("min_ms").get<double>(); };
    EXPECT_NEAR(rows[i].at("ratio_to_absolute").get<double>(), median(i) / median(1), 1e-9);
    EXPECT_NEAR(rows[i].at("fastest_ratio_to_absolute").get<double>(), fastest(i) / fastest(1),
                1e-9);
    EXPECT_NE(run->cli.out.find(encoding_registry()[i].name), std::string::npos);
  }
  EXPECT_NE(run->cli.out.find("2 steps each after 0 warm-up, one step of each encoding in turn"),
            std::string::npos)
      << run->cli.out;
  // A name that is no encoding is a usage error listing the valid ones.
  const auto dir = scratch_dir("encodings_bad");
  const auto bad = run_txl({"bench", "--config", tiny_config(dir), "--encodings", "rope,rotary"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--encodings: \"rotary\" is not valid; expected one of relative"),
            std::string::npos)
      << bad.err;
}

TEST(Bench, BadOptionsAreUsageErrors) {
  const auto dir = scratch_dir("bad");
  const auto config = tiny_config(dir);
  auto r = run_txl({"bench", "--config", config, "--steps", "0"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;
  r = run_txl({"bench", "--config", config, "--precision", "fp16"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--precision"), std::string::npos) << r.err;
  r = run_txl({"bench", "--config", config, "--encodings", "all", "--steps", "9999999999",
               "--rounds", "9999999999"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--rounds 9999999999 x --steps 9999999999"), std::string::npos) << r.err;
  r = run_txl({"bench", "--config", dir + "/missing.json"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = run_txl({"bench", "--config", config, "--set", "model.n_head=3"});
  EXPECT_EQ(r.code, 2) << r.err;
}

}  // namespace
}  // namespace txl
