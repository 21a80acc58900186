// Checkpoint files: what is saved comes back exactly, and every damaged, foreign or
// mismatching file is an InputError that names the file and says what is wrong.
#include "txl/run/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "checkpoint_fixtures.h"
#include "cli_harness.h"
#include "test_util.h"
#include "txl/platform/torch_compat.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"

namespace txl {
namespace {

constexpr int64_t kVocab = testing::kSampleVocab;
using testing::expect_load_error;
using testing::save_sample;
using testing::Saved;
using testing::small_model;

std::string read_bytes(const std::string& path) { return testing::read_text(path); }

void write_bytes(const std::string& path, const std::string& bytes) {
  testing::write_text(path, bytes);
}

TEST(Xxh64, MatchesTheReferenceTestVectors) {
  // From the xxHash reference implementation (seed 0).
  EXPECT_EQ(xxh64("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(xxh64("a", 1), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(xxh64("abc", 3), 0x44BC2CF5AD770999ull);
  const std::string long_text = "Nobody inspects the spammish repetition";
  EXPECT_EQ(xxh64(long_text.data(), long_text.size()), 0xFBCEA83C8A378BF1ull);
}

TEST(Xxh64, PiecesOfAnySizeHashAsTheWhole) {
  std::string bytes(1000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131 + 7) % 251);
  // Splits that end inside a stripe, on its edge, and pieces of 0, 1 and 33 bytes.
  for (const size_t piece :
       {size_t{1}, size_t{3}, size_t{31}, size_t{32}, size_t{33}, size_t{500}}) {
    for (const size_t total :
         {size_t{0}, size_t{5}, size_t{31}, size_t{32}, size_t{100}, size_t{1000}}) {
      Xxh64 h;
      for (size_t at = 0; at < total; at += piece) {
        h.add(bytes.data() + at, std::min(piece, total - at));
        h.add(bytes.data(), 0);
      }
      EXPECT_EQ(h.value(), xxh64(bytes.data(), total)) << "pieces of " << piece << ", " << total;
    }
  }
  Xxh64 text;
  text.add("Nobody inspects ", 16);
  text.add("the spammish repetition", 23);
  EXPECT_EQ(text.value(), 0xFBCEA83C8A378BF1ull);
}

TEST(CheckpointFile, RoundTripRestoresEverythingTheNextStepNeeds) {
  const Saved s = save_sample("round_trip.pt");
  ASSERT_NO_THROW(verify_checkpoint(s.path));
  const torch::Tensor rng_after_save = at::detail::getDefaultCPUGenerator().get_state();
  const double next_random = torch::rand({1}).item<double>();

  torch::manual_seed(99);  // other weights and another random stream, overwritten by the load
  TransformerLM model(small_model(), kVocab);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(0.5));
  const auto loaded = load_checkpoint(s.path, model, &optimizer);

  const TrainState& t = loaded.state;
  EXPECT_EQ(t.step, 2);
  EXPECT_EQ(t.tokens_seen, 24);
  EXPECT_EQ(t.stream_position, 12);
  EXPECT_EQ(t.best_valid_ppl, 3.5);
  EXPECT_EQ(t.config, s.state.config);
  EXPECT_EQ(t.vocab_checksum, 0xFEDCBA9876543210ull);
  EXPECT_EQ(t.lr, 0.0042);
  EXPECT_EQ(t.skipped_steps, 1);
  EXPECT_EQ(t.train_tokens, 1234);
  EXPECT_EQ(t.train_checksum, 42u);
  EXPECT_EQ(t.interval_loss_sum, 1.0 / 3.0);
  EXPECT_EQ(t.interval_steps, 3);
  EXPECT_EQ(t.interval_finite, 2);
  EXPECT_EQ(t.interval_seconds, 0.25);

  const auto a = s.model->named_parameters();
  const auto b = model->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b[item.key()])) << item.key();
  ASSERT_EQ(loaded.memory.layers.size(), s.memory.layers.size());
  for (size_t l = 0; l < s.memory.layers.size(); ++l) {
    EXPECT_TRUE(torch::equal(loaded.memory.layers[l], s.memory.layers[l])) << "memory " << l;
  }
  // AdamW: moments and step counts, and the param-group options torch does not save.
  auto& options = static_cast<torch::optim::AdamWOptions&>(optimizer.param_groups()[0].options());
  EXPECT_EQ(options.lr(), 0.0042);
  EXPECT_EQ(options.weight_decay(), 0.1);
  for (const auto& p : model->parameters()) {
    const auto key = optimizer_state_key(optimizer.state(), p);
    ASSERT_TRUE(optimizer.state().count(key));
    EXPECT_EQ(static_cast<torch::optim::AdamWParamState&>(*optimizer.state().at(key)).step(), 2);
  }
  // The random stream continues where it was when the checkpoint was written.
  EXPECT_TRUE(torch::equal(at::detail::getDefaultCPUGenerator().get_state(), rng_after_save));
  EXPECT_EQ(torch::rand({1}).item<double>(), next_random);
}

TEST(CheckpointFile, TruncatedAnywhereIsAClearError) {
  const Saved s = save_sample("whole.pt");
  const std::string bytes = read_bytes(s.path);
  for (size_t keep : {size_t{0}, size_t{5}, size_t{8}, size_t{47}, size_t{48}, size_t{300},
                      bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(bytes.size()) + " bytes");
    const std::string cut = s.path + ".cut" + std::to_string(keep) + ".pt";
    write_bytes(cut, bytes.substr(0, keep));
    expect_load_error(cut, {"truncated", "empty file"});
    expect_load_error(cut, {"truncated", "empty file"}, small_model(), kVocab, false);
    EXPECT_THROW(read_checkpoint_state(cut), InputError);
  }
  const std::string longer = s.path + ".longer.pt";
  write_bytes(longer, bytes + "extra");
  expect_load_error(longer, {"unexpected bytes"});
}

TEST(CheckpointFile, FlippedBytesAnywhereAreAClearError) {
  const Saved s = save_sample("flip.pt");
  const std::string bytes = read_bytes(s.path);
  // Header fields, the meta JSON, and 40 places spread over the tensor data.
  std::vector<size_t> positions = {0, 7, 8, 12, 16, 24, 32, 40, 47, 48, 60};
  for (int i = 1; i <= 40; ++i) positions.push_back(bytes.size() * i / 41);
  positions.push_back(bytes.size() - 1);
  for (size_t pos : positions) {
    SCOPED_TRACE("byte " + std::to_string(pos));
    std::string damaged = bytes;
    damaged[pos] = static_cast<char>(damaged[pos] ^ 0x10);
    const std::string bad = s.path + ".bad" + std::to_string(pos) + ".pt";
    write_bytes(bad, damaged);
    expect_load_error(bad, {"corrupted", "truncated", "not a txl checkpoint", "format version"});
  }
}

TEST(CheckpointFile, ForeignFilesAreNamedForWhatTheyAre) {
  const std::string dir = testing::fresh_dir("foreign");
  write_bytes(dir + "/config.pt", R"({"data": {"dir": "x"}})");
  expect_load_error(dir + "/config.pt", {"not a txl checkpoint (it looks like a JSON file)"});
  write_bytes(dir + "/zip.pt", std::string("PK\x03\x04", 4) + std::string(200, '\0'));
  expect_load_error(dir + "/zip.pt", {"zip archive"});
  write_bytes(dir + "/noise.pt", std::string(4096, '\x7f'));
  expect_load_error(dir + "/noise.pt", {"not a txl checkpoint"});
  write_bytes(dir + "/empty.pt", "");
  expect_load_error(dir + "/empty.pt", {"empty file"});
  std::filesystem::create_directories(dir + "/folder.pt");
  expect_load_error(dir + "/folder.pt", {"is a directory"});
  expect_load_error(dir + "/missing.pt", {"not found"});
}

TEST(CheckpointFile, ValidChecksumsOverGarbageStillGiveAnInputError) {
  // A payload LibTorch cannot read (it throws c10::Error from deep inside): the file is
  // otherwise well-formed, so only the conversion of that error stands between the user and
  // a backtrace.
  const Saved s = save_sample("forged.pt");
  std::string bytes = read_bytes(s.path);
  const testing::CheckpointLayout at(bytes);
  for (size_t i = at.weights_at; i < at.training_at; ++i) bytes[i] = static_cast<char>(i * 7);
  testing::reseal(bytes, at.weights_at, at.weights_size(), at.kWeightsHashAt);
  const std::string forged = s.path + ".forged.pt";
  write_bytes(forged, bytes);
  expect_load_error(forged, {"cannot load the archive"});
  expect_load_error(forged, {"cannot load the archive"}, small_model(), kVocab, false);
}

TEST(CheckpointFile, AnotherModelConfigurationIsNamedKeyByKey) {
  const Saved s = save_sample("model.pt");
  ModelConfig wider = small_model();
  wider.d_model = 32;
  wider.d_head = 16;
  expect_load_error(s.path, {"model.d_model: 16 vs 32"}, wider);
  ModelConfig other_dropout = small_model();  // no tensor shape changes, still refused
  other_dropout.dropout = 0.3;
  expect_load_error(s.path, {"model.dropout"}, other_dropout);
  ModelConfig learned = small_model();
  learned.pos_encoding = PosEncoding::kRelativeLearned;
  expect_load_error(s.path, {"model.pos_encoding: \"relative\" vs \"relative_learned\""}, learned);
  expect_load_error(s.path, {"vocabulary has 11 tokens, this run's has 12"}, small_model(), 12);
}

TEST(CheckpointFile, WeightsOnlyCheckpointCannotResumeTraining) {
  Saved s = save_sample("weights.pt");
  save_checkpoint(s.path, s.state, s.model, nullptr, Memory{});
  TransformerLM model(small_model(), kVocab);
  EXPECT_NO_THROW(load_checkpoint(s.path, model, nullptr));
  expect_load_error(s.path, {"weights only"});
}

TEST(CheckpointFile, ConfigDifferencesListEveryKeyButTheIgnoredOnes) {
  const nlohmann::json a = {{"model", {{"d_model", 16}, {"dropout", 0.1}}},
                            {"train", {{"max_steps", 5}}}};
  const nlohmann::json b = {{"model", {{"d_model", 32}, {"dropout", 0.1}, {"n_layer", 2}}},
                            {"train", {{"max_steps", 9}}}};
  EXPECT_EQ(config_differences(a, b),
            (std::vector<std::string>{"model.d_model: 16 vs 32", "model.n_layer: (absent) vs 2",
                                      "train.max_steps: 5 vs 9"}));
  EXPECT_EQ(config_differences(a, b, {"model.d_model", "model.n_layer", "train.max_steps"}).size(),
            0u);
  EXPECT_TRUE(config_differences(a, a).empty());
}

// A run (or study) written before a key existed holds no value for it: its default is no
// difference, so such runs still resume and such studies still continue.
TEST(CheckpointFile, AKeyAbsentFromAnOlderConfigMeansItsDefault) {
  const nlohmann::json older = {{"data", {{"dir", "x"}, {"tokenizer", "char"}}}};
  nlohmann::json now = older;
  now["data"]["vocab_size"] = 0;
  EXPECT_TRUE(config_differences(older, now).empty());
  EXPECT_TRUE(config_differences(now, older).empty());
  now["data"]["vocab_size"] = 300;
  EXPECT_EQ(config_differences(older, now),
            (std::vector<std::string>{"data.vocab_size: (absent) vs 300"}));
}

TEST(RunDirectory, LoadRunRefusesACheckpointFromAnotherVocabularyOrModel) {
  // A real run from the CLI, then damaged in three ways.
  const std::string root = testing::fresh_dir("load_run");
  const auto config = testing::tiny_config(testing::write_tiny_corpus(root + "/corpus"));
  const std::string config_path = testing::write_config(root + "/config.json", config);
  const std::string run = root + "/run";
  const auto r = testing::run_txl(
      {"train", "--config", config_path, "--run-dir", run, "--set", "train.max_steps=3"});
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_NO_THROW(load_run(run, "last"));

  // Another vocabulary of the same size: a permutation of the tokens.
  const std::string vocab_text = testing::read_text(run + "/vocab.json");
  auto vocab = nlohmann::json::parse(vocab_text);
  std::swap(vocab["tokens"][1], vocab["tokens"][2]);
  testing::write_text(run + "/vocab.json", vocab.dump());
  testing::expect_input_error([&] { load_run(run, "last"); }, {"different vocabulary"});
  testing::write_text(run + "/vocab.json", vocab_text);

  // config.json edited to another model.
  const std::string config_text = testing::read_text(run + "/config.json");
  auto edited = nlohmann::json::parse(config_text);
  edited["model"]["d_inner"] = 48;
  testing::write_text(run + "/config.json", edited.dump());
  testing::expect_input_error([&] { load_run(run, "last"); },
                              {"model.d_inner: 32 vs 48", "checkpoint.pt"});
}

}  // namespace
}  // namespace txl
