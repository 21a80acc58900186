// Generation: the incremental feeder equals full-context passes (memory encodings carry
// memory across generated tokens; absolute re-runs its window), token draws honour
// temperature and top-k, and `txl sample` is reproducible for a fixed seed, handles
// Chinese prompts on char runs and explains out-of-vocabulary prompts.
#include <gtest/gtest.h>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/model/sampling.h"

namespace txl {
namespace {

using testing::max_abs_diff;

constexpr int64_t kVocab = 11;

TransformerLM make_model(PosEncoding encoding) {
  torch::manual_seed(21);
  TransformerLM model(testing::tiny_model(encoding), kVocab);
  model->eval();
  return model;
}

torch::Tensor full_logits(TransformerLM& model, const std::vector<int64_t>& ids) {
  torch::NoGradGuard no_grad;
  return model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), {}, {}).scores[0];  // [n, V]
}

TEST(Sampling, MemoryFeederEqualsOneFullContextPassAtEveryStep) {
  for (auto encoding : testing::memory_encodings()) {
    SCOPED_TRACE(encoding_traits(encoding).name);
    auto model = make_model(encoding);
    const std::vector<int64_t> ids = {1, 4, 2, 9, 3, 3, 7, 0, 5, 6, 2, 8};
    const auto full = full_logits(model, ids);
    ContextFeeder feeder(model, /*context=*/64, /*chunk=*/3);
    // A 5-token prompt in chunks of 3, then one token at a time.
    auto logits = feeder.feed({ids.begin(), ids.begin() + 5});
    EXPECT_LT(max_abs_diff(logits, full[4]), 1e-5);
    for (size_t t = 5; t < ids.size(); ++t) {
      logits = feeder.feed({ids[t]});
      EXPECT_LT(max_abs_diff(logits, full[t]), 1e-5) << to_string(encoding) << " t=" << t;
    }
  }
}

TEST(Sampling, MemoryFeederKeepsExactlyContextTokens) {
  // One layer, so that memory holds only embeddings: with more layers the memory's states
  // have themselves seen further back, and no window pass reproduces them.
  torch::manual_seed(21);
  auto cfg = testing::tiny_model(PosEncoding::kRelative);
  cfg.n_layer = 1;
  TransformerLM model(cfg, kVocab);
  model->eval();
  const std::vector<int64_t> ids = {1, 4, 2, 9, 3, 3, 7, 0, 5, 6};
  ContextFeeder feeder(model, /*context=*/4, /*chunk=*/1);
  torch::Tensor logits;
  for (auto id : ids) logits = feeder.feed({id});
  // The last token sees itself and the 4 before it: a pass over the last 5 tokens.
  const auto window = full_logits(model, {ids.end() - 5, ids.end()});
  EXPECT_LT(max_abs_diff(logits, window[4]), 1e-5);
}

TEST(Sampling, AbsoluteFeederRerunsTheLastWindow) {
  auto model = make_model(PosEncoding::kAbsolute);
  const std::vector<int64_t> ids = {1, 4, 2, 9, 3, 3, 7, 0, 5, 6};
  ContextFeeder feeder(model, /*context=*/4, /*chunk=*/8);
  auto logits = feeder.feed({ids.begin(), ids.begin() + 6});
  EXPECT_LT(max_abs_diff(logits, full_logits(model, {ids.begin() + 2, ids.begin() + 6})[3]), 1e-5);
  logits = feeder.feed({ids[6]});
  EXPECT_LT(max_abs_diff(logits, full_logits(model, {ids.begin() + 3, ids.begin() + 7})[3]), 1e-5);
}

TEST(Sampling, DrawHonoursTopKAndTemperature) {
  auto logits = torch::tensor({0.1, 2.0, 1.5, -1.0, 1.9}, torch::kFloat);
  SplitMix64 rng(1);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(draw_token(logits, 1.0, 1, rng), 1);  // top-1 = argmax
  for (int i = 0; i < 50; ++i) {
    const auto t = draw_token(logits, 1.0, 2, rng);
    EXPECT_TRUE(t == 1 || t == 4) << t;
  }
  for (int i = 0; i < 50; ++i) EXPECT_EQ(draw_token(logits, 1e-4, 0, rng), 1);  // cold = argmax
  // Hot: every token shows up.
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 500; ++i) seen[draw_token(logits, 100.0, 0, rng)]++;
  for (int s : seen) EXPECT_GT(s, 50);
}

TEST(Sampling, SameSeedSameTokensOtherSeedOtherTokens) {
  auto model = make_model(PosEncoding::kRelative);
  SamplingOptions o;
  o.tokens = 40;
  o.context = 16;
  o.seed = 5;
  const auto a = sample_tokens(model, {1, 2, 3}, o);
  const auto b = sample_tokens(model, {1, 2, 3}, o);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 40u);
  o.seed = 6;
  EXPECT_NE(sample_tokens(model, {1, 2, 3}, o), a);
}

// --- through the CLI -------------------------------------------------------------------

std::string chinese_english(int lines, int offset) {
  static const char* zh[] = {"天地玄黄。", "宇宙洪荒。", "日月盈昃。", "辰宿列张。"};
  std::string text;
  const auto en = testing::tiny_english(lines, offset);
  size_t pos = 0;
  for (int i = 0; i < lines; ++i) {
    const size_t nl = en.find('\n', pos);
    text += en.substr(pos, nl - pos) + " " + zh[(i + offset) % 4] + "\n";
    pos = nl + 1;
  }
  return text;
}

TEST(SampleCli, ReproducibleForASeedWithChinesePromptsOnCharRuns) {
  const auto dir = testing::scratch_dir("sample");
  const auto corpus = testing::write_corpus(dir + "/corpus", chinese_english(200, 0),
                                            chinese_english(20, 1), chinese_english(20, 2));
  for (const std::string encoding : {"relative", "absolute"}) {
    const auto run = dir + "/" + encoding;
    ASSERT_TRUE(testing::train_tiny_run(corpus, run, encoding));
    const std::vector<std::string> args = {
        "sample", "--run", run,       "--prompt", "天地",          "--tokens", "60",
        "--seed", "7",     "--top-k", "5",        "--temperature", "0.9"};
    const auto a = testing::run_txl(args);
    const auto b = testing::run_txl(args);
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << encoding;
    EXPECT_EQ(a.out.rfind("天地", 0), 0u) << "output starts with the prompt: " << a.out;
    EXPECT_GT(a.out.size(), std::string("天地").size() + 60) << "60 generated characters";
    auto other = args;
    other[8] = "8";
    EXPECT_NE(testing::run_txl(other).out, a.out) << encoding << ": another seed, other text";
  }
  // Characters the run never saw: exit 2 naming each of them; nothing printed on stdout.
  const auto oov = testing::run_txl({"sample", "--run", dir + "/relative", "--prompt", "龍 天 Q"});
  EXPECT_EQ(oov.code, 2);
  EXPECT_NE(oov.err.find("U+9F8D"), std::string::npos) << oov.err;
  EXPECT_NE(oov.err.find("'Q'"), std::string::npos) << oov.err;
  EXPECT_EQ(oov.out, "");
  // An empty prompt starts at a line start.
  const auto empty = testing::run_txl({"sample", "--run", dir + "/relative", "--tokens", "10"});
  EXPECT_EQ(empty.code, 0) << empty.err;
  testing::cleanup_scratch();
}

TEST(SampleCli, WordRunsMapUnknownPromptWordsToUnkAndSaySo) {
  const auto dir = testing::scratch_dir("sample_word");
  const auto corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  const auto run = dir + "/word";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "word"));
  const auto r =
      testing::run_txl({"sample", "--run", run, "--prompt", "the lord zebra", "--tokens", "12"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("<unk>"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"zebra\""), std::string::npos) << r.err;
  EXPECT_EQ(r.out.rfind("the lord zebra ", 0), 0u) << r.out;
  testing::cleanup_scratch();
}

TEST(SampleCli, BadOptionsAreExitCode2) {
  const auto dir = testing::scratch_dir("sample_bad");
  const auto corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(200),
                            testing::tiny_english(20, 1), testing::tiny_english(20, 2));
  const auto run = dir + "/rel";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative"));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--temperature", "0"}, "--temperature"},
      {{"--temperature", "-1"}, "--temperature"},
      {{"--top-k", "-1"}, "--top-k"},
      {{"--tokens", "0"}, "--tokens"},
      {{"--checkpoint", "newest"}, "--checkpoint"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"sample", "--run", run};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = testing::run_txl(args);
    EXPECT_EQ(r.code, 2) << extra[0] << " " << extra[1];
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  const auto missing = testing::run_txl({"sample", "--run", dir + "/nope"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
