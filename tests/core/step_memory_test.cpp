// The measured training-memory estimate (train/step_footprint.h) and what it stands on:
//  - the CPU allocator counts the bytes of live tensors and their peak, small blocks and
//    large, and nothing is left counted once they are freed;
//  - the estimate's tensors (weights, gradients, AdamW state, the measured step's
//    activations extrapolated past 8 streams) come within 15% of the tensor peak that a
//    real `txl train` logs in metrics.jsonl for the same config and corpus;
//  - measuring leaves the random stream where it was, and a run on a device the allocator
//    does not see gets the formula's estimate, marked as not measured.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_harness.h"
#include "txl/config/config.h"
#include "txl/data/corpus.h"
#include "txl/platform/runtime.h"
#include "txl/train/step_footprint.h"

namespace txl {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_txl;
using testing::write_config;
using testing::write_text;

constexpr double kMiB = 1024.0 * 1024.0;

TEST(TensorMemory, CountsTheBytesOfLiveTensorsAndTheirPeak) {
  reuse_freed_ram();  // as txl's main does; the suite runs in its own process
  const TensorBytes before = tensor_bytes();
  ASSERT_TRUE(before.counted);
  {
    const auto small = torch::empty({1 << 20});   // 4 MiB: malloc's heap
    const auto large = torch::empty({10 << 20});  // 40 MiB: kept for reuse when freed
    const TensorBytes now = tensor_bytes();
    EXPECT_GE(now.live_bytes - before.live_bytes, 44 * kMiB);
    EXPECT_LT(now.live_bytes - before.live_bytes, 45 * kMiB);
    EXPECT_GE(now.peak_bytes, now.live_bytes);
    EXPECT_GE(now.small_peak_bytes, 4 * kMiB);
  }
  const TensorBytes after = tensor_bytes();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GE(after.peak_bytes - before.live_bytes, 44 * kMiB);
  EXPECT_GE(after.kept_bytes, 40 * kMiB);  // the large block, for the next request of its size
  reset_tensor_bytes_peak();
  EXPECT_EQ(tensor_bytes().peak_bytes, after.live_bytes);
  release_free_ram();
  EXPECT_EQ(tensor_bytes().kept_bytes, 0);
}

// 16 streams (past the 8 a measured step takes, so the estimate extrapolates), memory on.
nlohmann::json sixteen_stream_config(const std::string& dir) {
  std::string train;
  for (int i = 0; i < 300; ++i)
    train += "the quick brown fox " + std::to_string(i % 37) + " jumps.\n";
  write_text(dir + "/train.txt", train);
  write_text(dir + "/valid.txt", "the lazy fox 12 jumps.\n");
  write_text(dir + "/test.txt", "the quick fox 3 jumps.\n");
  auto j = nlohmann::json::parse(R"({
    "model": {"pos_encoding": "relative", "n_layer": 2, "d_model": 64, "n_head": 4, "d_head": 16,
              "d_inner": 256, "dropout": 0.1},
    "train": {"tgt_len": 48, "mem_len": 48, "batch_size": 16, "max_steps": 2, "log_interval": 1,
              "eval_interval": 0, "threads": 1}
  })");
  j["data"] = {{"dir", dir}};
  return j;
}

TEST(MeasuredEstimate, TheTensorsComeWithinFifteenPercentOfARealRunsPeak) {
  reuse_freed_ram();
  const std::string root = fresh_dir("measured_estimate");
  const nlohmann::json j = sixteen_stream_config(root);
  const std::string config_path = write_config(root + "/config.json", j);
  ASSERT_EQ(run_txl({"train", "--config", config_path, "--run-dir", root + "/run"}).code, 0);
  double logged = 0;  // the second step's line: the AdamW state exists from the first
  std::istringstream lines(read_text(root + "/run/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m.value("step", 0) == 2 && m.contains("peak_tensor_mb")) logged = m["peak_tensor_mb"];
  }
  ASSERT_GT(logged, 0) << "metrics.jsonl has no peak_tensor_mb at step 2";

  const Config config = config_from_json(j, config_path);
  const Corpus corpus = load_corpus(config.data);
  const TrainingFootprint e = measure_training_footprint(
      config, static_cast<int64_t>(corpus.vocab.size()), config.train.tgt_len, &corpus.train, 0);
  ASSERT_TRUE(e.measured);
  EXPECT_EQ(e.measured_streams, 16);
  const double tensors =
      (e.weight_bytes + e.gradient_bytes + e.optimizer_bytes + e.activation_bytes) / 1e6;
  EXPECT_NEAR(tensors / logged, 1.0, 0.15)
      << "estimate " << tensors << " MB, run " << logged << " MB";
  EXPECT_GT(e.process_bytes, 0);
  EXPECT_GT(e.slack_bytes, 0);
  EXPECT_NEAR(e.total_bytes(), tensors * 1e6 + e.process_bytes + e.slack_bytes, 1.0);
}

TEST(MeasuredEstimate, LeavesTheRandomStreamAndFallsBackToTheFormulaOffTheCpu) {
  reuse_freed_ram();
  const std::string root = fresh_dir("measured_rng");
  nlohmann::json j = sixteen_stream_config(root);
  Config config = config_from_json(j, root + "/config.json");
  auto generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor before = generator.get_state().clone();
  const TrainingFootprint measured = measure_training_footprint(config, 40, 48, nullptr, 0);
  EXPECT_TRUE(measured.measured);
  EXPECT_TRUE(torch::equal(generator.get_state(), before));

  config.train.device = "cuda:7";  // not this machine's: nothing to measure on
  const TrainingFootprint formula = measure_training_footprint(config, 40, 48, nullptr, 0);
  EXPECT_FALSE(formula.measured);
  EXPECT_EQ(formula.activation_bytes, estimate_training_footprint(config, 40, 48).activation_bytes);
}

}  // namespace
}  // namespace txl
