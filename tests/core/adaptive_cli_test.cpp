// model.adaptive through the real CLI: a tiny word run trains, evaluates, samples and resumes
// with adaptive input and softmax, its config.json keeps the resolved object, and every bad
// setting is refused with exit 2 naming the key and the rule, with nothing written.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_harness.h"
#include "txl/config/config.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::run_txl;

// The tiny English corpus has a few dozen words (ten, with and without a full stop, <unk>,
// <eos>): clusters [0, 4), [4, 8), [8, V).
nlohmann::json adaptive_config(const std::string& corpus) {
  auto j = testing::tiny_config(corpus);
  j["data"]["tokenizer"] = "word";
  j["model"]["adaptive"] = {{"cutoffs", {4, 8}}, {"div_val", 2}};
  j["train"]["max_steps"] = 6;
  j["train"]["eval_interval"] = 3;
  return j;
}

TEST(AdaptiveCli, TrainsEvaluatesSamplesAndResumes) {
  const std::string dir = testing::scratch_dir("adaptive");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const std::string config = testing::write_config(dir + "/config.json", adaptive_config(corpus));
  const std::string run = dir + "/run";
  const auto trained =
      run_txl({"train", "--config", config, "--run-dir", run, "--set", "train.max_steps=3"});
  ASSERT_EQ(trained.code, 0) << trained.err;
  const auto written = read_json_file(run + "/config.json");
  EXPECT_EQ(written["model"]["adaptive"], nlohmann::json::parse(R"({"cutoffs": [4, 8], "div_val": 2,
                                      "tie_projs": [false, true, true]})"));
  const auto resumed = run_txl({"train", "--resume", run, "--set", "train.max_steps=6"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const auto losses = testing::read_losses(run);
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.rbegin()->second, losses.begin()->second) << "the loss goes down";
  const auto eval = run_txl({"eval", "--run", run, "--lengths", "8"});
  ASSERT_EQ(eval.code, 0) << eval.err;
  const auto sample =
      run_txl({"sample", "--run", run, "--prompt", "the lord", "--tokens", "12", "--seed", "3"});
  ASSERT_EQ(sample.code, 0) << sample.err;
  EXPECT_EQ(sample.out.rfind("the lord", 0), 0u) << sample.out;
  EXPECT_GT(sample.out.size(), std::string("the lord").size() + 12) << sample.out;
  testing::cleanup_scratch();
}

// --set reaches into the object: a key of it, the whole object, or null.
TEST(AdaptiveCli, OverridesSetTheObjectOrNull) {
  nlohmann::json j = {{"data", {{"dir", "x"}, {"tokenizer", "word"}}}};
  apply_override(j, "model.adaptive.cutoffs=20,40");
  apply_override(j, "model.adaptive.div_val=4");
  Config c = config_from_json(j, "test");
  ASSERT_TRUE(c.model.adaptive.has_value());
  EXPECT_EQ(c.model.adaptive->cutoffs, (std::vector<int64_t>{20, 40}));
  EXPECT_EQ(c.model.adaptive->div_val, 4);
  EXPECT_EQ(c.model.adaptive->tie_projs, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(config_from_json(config_to_json(c), "again").model.adaptive, c.model.adaptive);
  apply_override(j, "model.adaptive.tie_projs=false");
  EXPECT_EQ(config_from_json(j, "test").model.adaptive->tie_projs,
            (std::vector<bool>{false, false, false}));
  apply_override(j, "model.adaptive=null");
  EXPECT_FALSE(config_from_json(j, "test").model.adaptive.has_value());
  EXPECT_TRUE(config_to_json(Config{})["model"]["adaptive"].is_null());
  EXPECT_THROW(apply_override(j, "model.adaptive.cutof=[3]"), InputError);
  EXPECT_THROW(apply_override(j, "model.n_layer.x=3"), InputError);
}

TEST(AdaptiveCli, BadSettingsAreRefusedWithNothingWritten) {
  const std::string dir = testing::scratch_dir("adaptive_bad");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const std::string config = testing::write_config(dir + "/config.json", adaptive_config(corpus));
  struct Row {
    std::vector<std::string> sets;
    std::string says;
  };
  const std::vector<Row> rows = {
      {{"model.adaptive.cutoffs=[8,4]"}, "model.adaptive.cutoffs[1] (4) must be greater"},
      {{"model.adaptive.cutoffs=[4,4]"}, "strictly increasing"},
      {{"model.adaptive.cutoffs=[0,4]"}, "model.adaptive.cutoffs[0] (0) must be > 0"},
      {{"model.adaptive.cutoffs=[4,100000]"},
       "model.adaptive.cutoffs[1] (100000) must be below the vocabulary's size"},
      {{"model.adaptive.cutoffs=[]"}, "model.adaptive.cutoffs must be a non-empty array"},
      {{"data.tokenizer=char"}, "model.adaptive needs data.tokenizer \"word\", got \"char\""},
      {{"model.adaptive.div_val=0"}, "model.adaptive.div_val (0) must be >= 1"},
      {{"model.adaptive.div_val=5"}, "leaves cluster 2 with width 0"},
      {{"model.adaptive.tie_projs=[false,true]"}, "model.adaptive.tie_projs has 2 entries"},
      {{"model.adaptive={\"div_val\":2}"}, "model.adaptive.cutoffs is required"},
      {{"model.adaptive={\"cutoffs\":[4],\"div\":2}"}, "unknown key \"model.adaptive.div\""},
  };
  for (const auto& row : rows) {
    const std::string run = dir + "/run";
    std::vector<std::string> args = {"train", "--config", config, "--run-dir", run};
    for (const auto& s : row.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << row.sets[0] << ": " << r.output;
    EXPECT_NE(r.err.find(row.says), std::string::npos) << row.sets[0] << ": " << r.err;
    EXPECT_FALSE(fs::exists(run)) << row.sets[0] << ": a run directory was written";
  }
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
