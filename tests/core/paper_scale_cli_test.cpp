// The paper's scale through the real executable:
//  - `txl train --dry-run` sizes a config (parameters equal to the model built from it, FLOPs,
//    memory by part, the verdict) and writes nothing; its own options are checked;
//  - `--same-length` evaluates through the memory protocol only, is cached apart from a
//    plain memory evaluation, and a run trains with train.same_length.
#include <gtest/gtest.h>

#include <regex>

#include "cli_harness.h"
#include "txl/eval/protocols/memory.h"
#include "txl/model/transformer.h"
#include "txl/train/footprint_estimate.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;
using testing::run_txl;
using testing::write_config;

// The number after `label` in `text` (-1 when absent).
double number_after(const std::string& text, const std::string& label) {
  const std::regex re(label + R"(\s*([0-9.eE+-]+))");
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stod(m[1]) : -1.0;
}

TEST(DryRun, SizesTheConfigFromTheCorpusAndWritesNothing) {
  const std::string dir = fresh_dir("dry_run");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  json config = testing::tiny_config(corpus);
  config["data"]["tokenizer"] = "word";
  const std::string path = write_config(dir + "/c.json", config);
  const auto before = fs::directory_iterator(dir);
  const auto r = run_txl({"train", "--config", path, "--dry-run"});
  ASSERT_EQ(r.code, 0) << r.output;
  // The parameter count is that of the model the config builds.
  const Config parsed = config_from_json(config, "c.json");
  const double vocab = number_after(r.out, "vocabulary");
  ASSERT_GT(vocab, 2) << r.out;
  TransformerLM model(parsed.model, static_cast<int64_t>(vocab));
  EXPECT_EQ(number_after(r.out, "parameters:"), static_cast<double>(count_parameters(*model)))
      << r.out;
  EXPECT_GT(number_after(r.out, "FLOPs per token:"), 0) << r.out;
  EXPECT_NE(r.out.find("activations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fits"), std::string::npos) << r.out;
  // Nothing made: no runs/ folder, no token cache beside the corpus.
  EXPECT_FALSE(fs::exists("runs/c")) << r.out;
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2);  // corpus/ and c.json
}

TEST(DryRun, AVocabularySizeStandsForTheCorpusAndAConfigTooLargeIsSaidNotToFit) {
  const std::string dir = fresh_dir("dry_run_vocab");
  json config = testing::tiny_config(dir + "/no-such-corpus");
  config["model"]["d_model"] = 1024;
  config["model"]["n_head"] = 16;
  config["model"]["d_head"] = 64;
  const std::string path = write_config(dir + "/c.json", config);
  const auto r = run_txl({"train", "--config", path, "--dry-run", "--vocab-size", "50000000"},
                         {"TXL_MEMORY_LIMIT_MB=1000"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(number_after(r.out, "vocabulary"), 50000000.0) << r.out;
  EXPECT_NE(r.out.find("does NOT fit"), std::string::npos) << r.out;
}

TEST(DryRun, AdaptiveCutoffsAreCheckedAgainstTheVocabulary) {
  const std::string dir = fresh_dir("dry_run_adaptive");
  json config = testing::tiny_config(dir + "/no-such-corpus");
  config["data"]["tokenizer"] = "word";
  config["model"]["adaptive"] = json::parse(R"({"cutoffs": [50]})");
  const std::string path = write_config(dir + "/c.json", config);
  const auto fits = run_txl({"train", "--config", path, "--dry-run", "--vocab-size", "60"});
  EXPECT_EQ(fits.code, 0) << fits.output;
  const auto r = run_txl({"train", "--config", path, "--dry-run", "--vocab-size", "40"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("model.adaptive.cutoffs[0] (50) must be below the vocabulary's size (40"),
            std::string::npos)
      << r.output;
  // txl bench sizes its random tokens with --vocab: the same rule, before anything runs.
  const auto bench = run_txl({"bench", "--config", path, "--vocab", "40", "--steps", "1"});
  EXPECT_EQ(bench.code, 2) << bench.output;
  EXPECT_NE(bench.output.find("model.adaptive.cutoffs[0] (50) must be below"), std::string::npos)
      << bench.output;
}

TEST(DryRun, ItsOptionsAreChecked) {
  const std::string dir = fresh_dir("dry_run_bad");
  const std::string path = write_config(dir + "/c.json", testing::tiny_config(dir + "/corpus"));
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"train", "--config", path, "--vocab-size", "100"}, "--vocab-size requires --dry-run"},
      {{"train", "--config", path, "--dry-run", "--vocab-size", "1"},
       "--vocab-size 1 is not valid"},
      {{"train", "--config", path, "--dry-run", "--vocab-size", "-5"},
       "--vocab-size -5 is not valid"},
      {{"train", "--config", path, "--dry-run", "--vocab-size", "ten"}, "--vocab-size"},
      {{"train", "--dry-run", "--vocab-size", "100"}, "needs --config"},
      {{"train", "--resume", dir, "--dry-run"}, "excludes"},
      {{"train", "--config", path, "--dry-run"}, "does not exist"},  // no corpus, no size
  };
  for (const auto& c : cases) {
    const auto r = run_txl(c.args);
    EXPECT_EQ(r.code, 2) << c.expected << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << r.output;
  }
}

TEST(SameLength, EvaluatesThroughTheMemoryProtocolOnlyAndIsCachedApart) {
  const std::string dir = fresh_dir("same_length_cli");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const std::string run = dir + "/run";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "char", 3,
                                      {"--set", "train.same_length=true"}));
  const auto plain =
      run_txl({"eval", "--run", run, "--method", "memory", "--lengths", "8", "--mem-len", "12",
               "--max-tokens", "300", "--json", dir + "/plain.json"});
  ASSERT_EQ(plain.code, 0) << plain.output;
  const auto same =
      run_txl({"eval", "--run", run, "--method", "memory", "--lengths", "8", "--mem-len", "12",
               "--same-length", "--max-tokens", "300", "--json", dir + "/same.json"});
  ASSERT_EQ(same.code, 0) << same.output;
  EXPECT_EQ(same.output.find("(cached)"), std::string::npos) << "same_length read the plain entry";
  EXPECT_NE(same.out.find("same"), std::string::npos) << same.out;
  const json a = json::parse(testing::read_text(dir + "/plain.json"));
  const json b = json::parse(testing::read_text(dir + "/same.json"));
  EXPECT_EQ(a["results"][0].value(memory_setting::kSameLength, true), false) << a.dump();
  EXPECT_EQ(b["results"][0].value(memory_setting::kSameLength, false), true) << b.dump();
  EXPECT_NE(a["results"][0]["nll_sum"], b["results"][0]["nll_sum"]);
  // A flag of the memory protocol with another protocol, and a window without memory.
  const auto other = run_txl({"eval", "--run", run, "--lengths", "8", "--same-length"});
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("--same-length applies to --method memory only"), std::string::npos)
      << other.output;
  const auto no_memory = run_txl({"eval", "--run", run, "--method", "memory", "--lengths", "8",
                                  "--mem-len", "0", "--same-length"});
  EXPECT_EQ(no_memory.code, 2) << no_memory.output;
  EXPECT_NE(no_memory.output.find("--mem-len >= 1"), std::string::npos) << no_memory.output;
}

}  // namespace
}  // namespace txl
