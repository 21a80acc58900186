// txl bench --eval-only (train/eval_bench.h): one evaluation method timed alone, its JSON, its
// FLOP count (bench.h's evaluation formula per pass, relative's W_r R charged only in the first
// pass, the others reading the kept keys), and its refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/train/bench.h"

namespace txl {
namespace {

using testing::run_txl;
using testing::scratch_dir;
using testing::write_text;

// 1 layer, d_model 16 = 2 heads x 8, d_inner 32, windows of 8, 2 a pass. No corpus is read.
const char* const kTinyConfig = R"({
  "model": { "pos_encoding": "relative", "n_layer": 1, "d_model": 16, "n_head": 2, "d_head": 8,
             "d_inner": 32, "dropout": 0.1 },
  "train": { "tgt_len": 8, "mem_len": 8, "batch_size": 2 }
})";

ModelConfig tiny_model() {
  ModelConfig m;
  m.n_layer = 1;
  m.d_model = 16;
  m.n_head = 2;
  m.d_head = 8;
  m.d_inner = 32;
  return m;
}

std::string tiny_config(const std::string& dir) {
  write_text(dir + "/tiny.json", kTinyConfig);
  return dir + "/tiny.json";
}

TEST(EvalBench, TimesOneMethodAloneAndCountsEachPassOnce) {
  const auto dir = scratch_dir("eval_bench_json");
  const auto r =
      run_txl({"bench", "--config", tiny_config(dir), "--eval-only", "--method", "nonoverlap",
               "--tokens", "32", "--repeats", "2", "--vocab", "50", "--json", dir + "/b.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("method nonoverlap"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(testing::read_text(dir + "/b.json"));
  EXPECT_EQ(j.at("mode"), "eval-only");
  EXPECT_EQ(j.at("method"), "nonoverlap");
  EXPECT_EQ(j.at("tokens"), 32);
  EXPECT_EQ(j.at("passes"), 2);  // 4 windows of 8, 2 a pass
  EXPECT_EQ(j.at("ms").at("count"), 2);
  for (const char* key : {"tokens_per_s", "gemm_peak_gflops", "mfu", "peak_rss_mb"})
    EXPECT_GT(j.at(key).get<double>(), 0.0) << key;
  // Two passes of 2 x 8 tokens without memory: W_r R is projected in the first only.
  const FlopCount f = model_flops(tiny_model(), 50, 2, 8, 0);
  EXPECT_NEAR(j.at("flops_per_token").get<double>(), f.eval_per_token - f.eval_table_per_token / 2,
              1e-6 * f.eval_per_token);
}

TEST(EvalBench, MemoryWithSameLengthRuns) {
  const auto dir = scratch_dir("eval_bench_memory");
  const auto r = run_txl({"bench", "--config", tiny_config(dir), "--eval-only", "--method",
                          "memory", "--mem-len", "16", "--same-length", "--streams", "1",
                          "--repeats", "1", "--vocab", "50", "--json", dir + "/b.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(testing::read_text(dir + "/b.json"));
  EXPECT_EQ(j.at("method"), "memory");
  EXPECT_NE(j.at("setting").get<std::string>().find("16"), std::string::npos) << j.dump();
  // The default: 8 passes with full memory after 4 x ceil(16 / 8) passes that fill it.
  EXPECT_EQ(j.at("passes"), 16);
}

TEST(EvalBench, OptionsOfTheOtherModeAndBadValuesAreRefused) {
  const auto dir = scratch_dir("eval_bench_refusals");
  const auto config = tiny_config(dir);
  const std::vector<std::vector<std::string>> bad = {
      {"--eval-only", "--steps", "3"},
      {"--eval-only", "--encodings", "all"},
      {"--method", "memory"},
      {"--mem-len", "16"},
      {"--eval-only", "--method", "nonoverlap", "--mem-len", "16"},
      {"--eval-only", "--method", "nosuch"},
      {"--eval-only", "--repeats", "0"},
      {"--eval-only", "--tokens", "-1"},
      {"--eval-only", "--length", "-8"},
      {"--eval-only", "--clamp-len", "-1"}};
  for (auto args : bad) {
    args.insert(args.begin(), {"bench", "--config", config, "--json", dir + "/b.json"});
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << args.back() << "\n" << r.out << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/b.json"));
  }
}

}  // namespace
}  // namespace txl
