// Long work shows its progress (issue 54, cause 13): training's validation and the bench print
// lines with tokens, rate and time left on stderr, as txl eval does (the final validation of a
// 260,074-token split printed nothing for 485 s, a paper-shape bench nothing for 10 minutes).
// The tests set the interval to 0 so that tiny runs print every line.
#include <gtest/gtest.h>

#include "test_util.h"
#include "txl/eval/progress.h"
#include "txl/train/bench.h"
#include "txl/train/distributed.h"
#include "txl/train/validation_loss.h"

namespace txl {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LongWorkProgress, AnEvaluationLineWithTokensSaysTheTokensAndTheRate) {
  EvalProgress p;
  p.windows = 508;
  p.windows_done = 254;
  p.fraction = 0.5;
  EXPECT_EQ(format_eval_progress("valid @ step 2", p, 192.0, 260074),
            "  valid @ step 2: 50% of 508 windows (254 done), 130,037 of 260,074 tokens, "
            "677 tok/s, 03:12 elapsed, about 03:12 left");
  // Without the tokens, the line eval prints.
  EXPECT_EQ(format_eval_progress("length 512", p, 192.0),
            "  length 512: 50% of 508 windows (254 done), 03:12 elapsed, about 03:12 left");
}

Config tiny_training() {
  Config c;
  c.data.dir = "corpus";
  c.model = testing::tiny_model(PosEncoding::kRelative);
  c.train.tgt_len = 8;
  c.train.mem_len = 8;
  c.train.batch_size = 2;
  c.train.threads = 1;
  c.eval.batch_tokens = 64;
  return c;
}

TEST(LongWorkProgress, ValidationInTrainingShowsItsProgress) {
  const Config c = tiny_training();
  torch::manual_seed(1);
  TransformerLM model(c.model, 11);
  model->eval();
  const auto valid = testing::random_ids(801, 11);
  Distributed one(DistributedEnv{});
  ::testing::internal::CaptureStderr();
  const auto result = validation_loss(model, valid, c, one, "valid @ step 3", 0.0);
  const std::string lines = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(result.tokens, 800);
  EXPECT_TRUE(has(lines, "  valid @ step 3: 100% of ")) << lines;
  EXPECT_TRUE(has(lines, "800 of 800 tokens, ")) << lines;
  EXPECT_TRUE(has(lines, " tok/s, ")) << lines;
  // Without a label (another rank, a caller that prints nothing), no line.
  ::testing::internal::CaptureStderr();
  validation_loss(model, valid, c, one);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(LongWorkProgress, TheBenchShowsItsStepsAndEvaluations) {
  BenchOptions o;
  o.vocab_size = 50;
  o.steps = 2;
  o.warmup = 1;
  o.eval_repeats = 1;
  o.progress_seconds = 0.0;
  ::testing::internal::CaptureStderr();
  run_bench(tiny_training(), o);
  const std::string lines = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(has(lines, "  bench: warm-up, step 1.0 of 1, 16 tokens, ")) << lines;
  EXPECT_TRUE(has(lines, "  bench: timed, step 2.0 of 2, 32 tokens, ")) << lines;
  EXPECT_TRUE(has(lines, "  bench: memory L=8: ")) << lines;
  EXPECT_TRUE(has(lines, " tok/s, ")) << lines;
  EXPECT_TRUE(has(lines, " left")) << lines;
}

}  // namespace
}  // namespace txl
