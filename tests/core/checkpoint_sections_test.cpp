// Checkpoint format 3's two sections: the weights (model, random state) and the training
// state (AdamW's moments, the memory) lie apart, each with its length and checksum. A reader
// of the weights neither reads nor checks the training section, so damage there stops a
// resume and verify_checkpoint but not an evaluation; a file cut anywhere is refused by all.
#include <gtest/gtest.h>

#include "checkpoint_fixtures.h"
#include "cli_harness.h"
#include "tiny_runs.h"
#include "txl/run/checkpoint.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using testing::CheckpointLayout;
using testing::expect_load_error;
using testing::kSampleVocab;
using testing::save_sample;
using testing::Saved;
using testing::small_model;

// Loads `path` without an optimizer into a fresh model; the model.
TransformerLM load_weights(const std::string& path, Memory* memory = nullptr) {
  torch::manual_seed(99);  // other weights, overwritten by the load
  TransformerLM model(small_model(), kSampleVocab);
  auto loaded = load_checkpoint(path, model, nullptr);
  if (memory) *memory = loaded.memory;
  return model;
}

// `bytes` with the byte at each of `positions` flipped, written next to `path`.
std::string damaged_copy(const std::string& path, std::string bytes,
                         const std::vector<size_t>& positions, const std::string& name) {
  for (size_t pos : positions) bytes[pos] = static_cast<char>(bytes[pos] ^ 0x10);
  const std::string out = path + "." + name + ".pt";
  testing::write_text(out, bytes);
  return out;
}

TEST(CheckpointSections, TheOptimizerStateAndMemoryLieInTheTrainingSection) {
  Saved s = save_sample("sections.pt");
  const std::string bytes = testing::read_text(s.path);
  EXPECT_EQ(testing::get_u32(bytes, 8), 3u);  // the format version
  const CheckpointLayout at(bytes);
  EXPECT_EQ(at.end, bytes.size());
  // AdamW keeps two moments per weight: its section outweighs the weights'.
  EXPECT_GT(at.training_size(), at.weights_size());
  Memory memory;
  EXPECT_TRUE(testing::same_weights(load_weights(s.path, &memory), s.model));
  EXPECT_TRUE(memory.empty()) << "a weights-only load reads no memory";
  // Weights only (txl import): an empty training section.
  save_checkpoint(s.path, s.state, s.model, nullptr, Memory{});
  const CheckpointLayout alone(testing::read_text(s.path));
  EXPECT_EQ(alone.training_size(), 0u);
  EXPECT_TRUE(testing::same_weights(load_weights(s.path), s.model));
  ASSERT_NO_THROW(verify_checkpoint(s.path));
}

TEST(CheckpointSections, ADamagedTrainingSectionStopsAResumeAndVerifyNotAWeightsOnlyLoad) {
  const Saved s = save_sample("training.pt");
  const std::string bytes = testing::read_text(s.path);
  const CheckpointLayout at(bytes);
  for (size_t pos : {at.training_at, at.training_at + at.training_size() / 2, at.end - 1}) {
    SCOPED_TRACE("byte " + std::to_string(pos));
    const std::string bad = damaged_copy(s.path, bytes, {pos}, "t" + std::to_string(pos));
    EXPECT_TRUE(testing::same_weights(load_weights(bad), s.model));
    expect_load_error(bad, {"checksum of the training section"});
    testing::expect_input_error([&] { verify_checkpoint(bad); },
                                {bad, "training section", "txl eval reads them"});
  }
}

TEST(CheckpointSections, ADamagedWeightsSectionStopsEveryLoad) {
  const Saved s = save_sample("weights.pt");
  const std::string bytes = testing::read_text(s.path);
  const CheckpointLayout at(bytes);
  for (size_t pos : {at.weights_at, at.weights_at + at.weights_size() / 2, at.training_at - 1}) {
    SCOPED_TRACE("byte " + std::to_string(pos));
    const std::string bad = damaged_copy(s.path, bytes, {pos}, "w" + std::to_string(pos));
    expect_load_error(bad, {"checksum of the weights section"}, small_model(), kSampleVocab, false);
    expect_load_error(bad, {"checksum of the weights section"});
    EXPECT_THROW(verify_checkpoint(bad), InputError);
  }
}

TEST(CheckpointSections, AFileCutInEitherSectionStopsAWeightsOnlyLoad) {
  const Saved s = save_sample("cut.pt");
  const std::string bytes = testing::read_text(s.path);
  const CheckpointLayout at(bytes);
  for (size_t keep : {at.meta_at + 1, at.weights_at + 1, at.training_at,
                      at.training_at + at.training_size() / 2, at.end - 1}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(bytes.size()));
    const std::string cut = s.path + ".cut" + std::to_string(keep) + ".pt";
    testing::write_text(cut, bytes.substr(0, keep));
    expect_load_error(cut, {"truncated"}, small_model(), kSampleVocab, false);
    EXPECT_THROW(verify_checkpoint(cut), InputError);
  }
}

TEST(CheckpointSections, AForgedTrainingSectionIsAnInputErrorForAResumeOnly) {
  // Garbage under a valid checksum: LibTorch refuses it, converted to an InputError.
  const Saved s = save_sample("forged.pt");
  std::string bytes = testing::read_text(s.path);
  const CheckpointLayout at(bytes);
  for (size_t i = at.training_at; i < at.end; ++i) bytes[i] = static_cast<char>(i * 7);
  testing::reseal(bytes, at.training_at, at.training_size(), at.kTrainingHashAt);
  const std::string forged = s.path + ".forged.pt";
  testing::write_text(forged, bytes);
  ASSERT_NO_THROW(verify_checkpoint(forged));  // the checksums agree
  expect_load_error(forged, {"cannot load the archive (training section)"});
  EXPECT_TRUE(testing::same_weights(load_weights(forged), s.model));
}

TEST(CheckpointSections, EvalReadsARunWhoseTrainingSectionIsDamagedAndResumeRefusesIt) {
  const std::string run =
      testing::copy_run(testing::tiny_run("relative"), testing::fresh_dir("sections") + "/run");
  const std::string ckpt = run + "/checkpoint.pt";
  const auto before = testing::run_txl({"eval", "--run", run, "--checkpoint", "last"});
  ASSERT_EQ(before.code, 0) << before.err;
  const std::string bytes = testing::read_text(ckpt);
  const CheckpointLayout at(bytes);
  std::string damaged = bytes;
  damaged[at.training_at + at.training_size() / 3] ^= 0x10;
  testing::write_text(ckpt, damaged);
  const auto after = testing::run_txl({"eval", "--run", run, "--checkpoint", "last"});
  EXPECT_EQ(after.code, 0) << after.err;
  EXPECT_NE(after.out.find("ppl"), std::string::npos) << after.out;
  const auto resumed = testing::run_txl({"train", "--resume", run, "--set", "train.max_steps=5"});
  EXPECT_EQ(resumed.code, 2) << resumed.output;
  EXPECT_NE(resumed.output.find(ckpt + ": corrupted: the checksum of the training section"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(testing::read_text(ckpt), damaged) << "the refusal changed the checkpoint";
}

}  // namespace
}  // namespace txl
