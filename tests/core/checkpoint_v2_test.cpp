// Format version 2 checkpoints (one payload holding weights and training state, written by
// txl before version 3) are still read, for every purpose: a weights-only load, a resume
// (bit for bit), verify_checkpoint, and `txl eval` / `txl train --resume` of a run whose
// checkpoint is one; the next checkpoint such a run writes is version 3.
#include <gtest/gtest.h>

#include "checkpoint_fixtures.h"
#include "cli_harness.h"
#include "txl/data/vocab.h"
#include "txl/platform/torch_compat.h"
#include "txl/run/checkpoint.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {
namespace {

using testing::expect_load_error;
using testing::kSampleVocab;
using testing::Saved;
using testing::small_model;

Saved write_v2_sample(const std::string& name, bool with_optimizer = true) {
  Saved s = testing::train_sample(testing::fresh_dir("ckpt_v2") + "/" + name);
  testing::write_v2_checkpoint(s.path, s.state, s.model,
                               with_optimizer ? s.optimizer.get() : nullptr, s.memory);
  return s;
}

TEST(CheckpointV2, AVersion2FileLoadsWholeForAResumeAndItsWeightsAlone) {
  const Saved s = write_v2_sample("v2.pt");
  EXPECT_EQ(testing::get_u32(testing::read_text(s.path), 8), 2u);
  ASSERT_NO_THROW(verify_checkpoint(s.path));
  EXPECT_EQ(read_checkpoint_state(s.path).vocab_checksum, 0xFEDCBA9876543210ull);

  TransformerLM weights(small_model(), kSampleVocab);
  const auto alone = load_checkpoint(s.path, weights, nullptr);
  EXPECT_TRUE(testing::same_weights(weights, s.model));
  EXPECT_EQ(alone.state.step, 2);
  EXPECT_TRUE(alone.memory.empty());

  TransformerLM model(small_model(), kSampleVocab);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.5));
  const auto loaded = load_checkpoint(s.path, model, &optimizer);
  EXPECT_TRUE(testing::same_weights(model, s.model));
  EXPECT_EQ(loaded.state.interval_seconds, 0.25);
  ASSERT_EQ(loaded.memory.layers.size(), s.memory.layers.size());
  for (size_t l = 0; l < s.memory.layers.size(); ++l) {
    EXPECT_TRUE(torch::equal(loaded.memory.layers[l], s.memory.layers[l])) << "memory " << l;
  }
  auto& options = static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[0].options());
  EXPECT_EQ(options.lr(), 0.0042);
  EXPECT_EQ(options.weight_decay(), 0.1);
  for (const auto& p : model->parameters()) {
    const auto key = optimizer_state_key(optimizer.state(), p);
    ASSERT_TRUE(optimizer.state().count(key));
    const auto& state = static_cast<torch::optim::AdamWParamState&>(*optimizer.state().at(key));
    EXPECT_EQ(state.step(), 2);
  }
}

TEST(CheckpointV2, DamagedOrWeightsOnlyVersion2FilesAreClearErrors) {
  const Saved s = write_v2_sample("v2_damaged.pt");
  const std::string bytes = testing::read_text(s.path);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;  // in its one payload: every load checks it
  testing::write_text(s.path + ".bad.pt", flipped);
  expect_load_error(s.path + ".bad.pt", {"checksum of the tensor data"});
  expect_load_error(s.path + ".bad.pt", {"checksum of the tensor data"}, small_model(),
                    kSampleVocab, false);
  testing::write_text(s.path + ".cut.pt", bytes.substr(0, bytes.size() - 1));
  expect_load_error(s.path + ".cut.pt", {"truncated"}, small_model(), kSampleVocab, false);
  testing::write_text(s.path + ".short.pt", bytes.substr(0, 40));  // shorter than its header
  expect_load_error(s.path + ".short.pt", {"48-byte checkpoint header"});
  // A version 2 file of weights only cannot be resumed; the message says what to do instead.
  const Saved w = write_v2_sample("v2_weights.pt", /*with_optimizer=*/false);
  expect_load_error(w.path, {"holds weights only", "--init-from"});
  // Versions this txl does not know.
  for (const uint32_t version : {1u, 4u}) {
    std::string other = bytes;
    other[8] = static_cast<char>(version);
    const std::string path = s.path + ".v" + std::to_string(version) + ".pt";
    testing::write_text(path, other);
    expect_load_error(path, {"checkpoint format version " + std::to_string(version) +
                             ", this txl reads versions 2 to 3"});
  }
}

// The run's last checkpoint rewritten as version 2, with everything it held.
void rewrite_as_version_2(const std::string& run) {
  const RunPaths paths{run};
  const Config config = config_from_json(read_json_file(paths.config()), paths.config());
  TransformerLM model =
      make_model(config.model, Vocab::load(paths.vocab()).size(), torch::Device(torch::kCPU));
  torch::optim::AdamW optimizer(
      model->parameters(),
      torch::optim::AdamWOptions(config.train.lr).weight_decay(config.train.weight_decay));
  // Restores the random generator too, which write_v2_checkpoint saves.
  const auto loaded = load_checkpoint(paths.last_checkpoint(), model, &optimizer);
  testing::write_v2_checkpoint(paths.last_checkpoint(), loaded.state, model, &optimizer,
                               loaded.memory);
}

TEST(CheckpointV2, ARunStoppedWithAVersion2CheckpointEvaluatesAndResumesBitForBit) {
  const std::string root = testing::fresh_dir("v2_run");
  auto config = testing::tiny_config(testing::write_tiny_corpus(root + "/corpus"));
  config["train"]["max_steps"] = 12;
  const std::string config_path = testing::write_config(root + "/config.json", config);
  const std::string reference = root + "/reference";
  ASSERT_EQ(testing::run_txl({"train", "--config", config_path, "--run-dir", reference}).code, 0);
  const std::string run = root + "/stopped";
  const auto stopped = testing::run_txl({"train", "--config", config_path, "--run-dir", run},
                                        {"TXL_INJECT_STOP_AT_STEP=7"});
  ASSERT_EQ(stopped.code, 130) << stopped.output;
  const auto eval_v3 = testing::run_txl({"eval", "--run", run, "--checkpoint", "last"});
  ASSERT_EQ(eval_v3.code, 0) << eval_v3.err;
  rewrite_as_version_2(run);
  const std::string ckpt = run + "/checkpoint.pt";
  ASSERT_EQ(testing::get_u32(testing::read_text(ckpt), 8), 2u);
  std::filesystem::remove_all(run + "/eval-cache");  // evaluated afresh from the v2 file
  const auto eval_v2 = testing::run_txl({"eval", "--run", run, "--checkpoint", "last"});
  ASSERT_EQ(eval_v2.code, 0) << eval_v2.err;
  EXPECT_EQ(eval_v2.out, eval_v3.out);
  const auto resumed = testing::run_txl({"train", "--resume", run});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed at step 7"), std::string::npos) << resumed.output;
  const auto expected = testing::read_losses(reference);
  const auto losses = testing::read_losses(run);
  ASSERT_EQ(losses.size(), 12u);
  for (int64_t step = 1; step <= 12; ++step) EXPECT_EQ(losses.at(step), expected.at(step)) << step;
  EXPECT_EQ(testing::get_u32(testing::read_text(ckpt), 8), 3u);  // written anew as version 3
}

}  // namespace
}  // namespace txl
