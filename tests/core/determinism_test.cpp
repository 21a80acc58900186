// The same seed gives the same run at a fixed number of threads (issue 54): the sums that
// threads add to (the output bias's gradient in the loss, the attention bias's in fused
// attention) come out the same to the last bit every time, and two trainings at 2 threads,
// or one interrupted and resumed at 2 threads, log the same losses bit for bit.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/model/fused_attention.h"
#include "txl/model/kernels.h"
#include "txl/model/transformer.h"

namespace txl {
namespace {

using testing::fresh_dir;
using testing::read_losses;
using testing::run_txl;
using testing::tiny_config;
using testing::write_config;
using testing::write_tiny_corpus;

struct ThreadCount {
  explicit ThreadCount(int threads) { at::set_num_threads(threads); }
  ~ThreadCount() { at::set_num_threads(saved); }
  int saved = at::get_num_threads();
};

// Many row blocks per thread, each adding its part of the bias gradient: with the parts added
// as the threads got there, repeats differed in the last bits.
TEST(SameRunAtFixedThreads, LossBiasGradientIsTheSameEveryTime) {
  ThreadCount two(2);
  torch::manual_seed(1);
  const auto logits = torch::randn({4096, 37});
  const auto targets = torch::randint(37, {4096}, torch::kLong);
  const auto bias0 = torch::randn({37});
  const auto grads_once = [&] {
    const auto z = logits.clone().requires_grad_();
    const auto bias = bias0.clone().requires_grad_();
    const auto grads = torch::autograd::grad({token_nll(z, targets, bias).sum()}, {z, bias});
    return std::make_pair(grads[0], grads[1]);
  };
  const auto [z_first, bias_first] = grads_once();
  for (int repeat = 0; repeat < 20; ++repeat) {
    const auto [z, bias] = grads_once();
    ASSERT_TRUE(torch::equal(z, z_first)) << "repeat " << repeat;
    ASSERT_TRUE(torch::equal(bias, bias_first)) << "repeat " << repeat;
  }
}

// Four chunks of heads, each with its partial bias gradient (two chunks add the same way in
// either order: 0 + a + b = 0 + b + a).
TEST(SameRunAtFixedThreads, FusedAttentionBiasGradientIsTheSameEveryTime) {
  ThreadCount four(4);
  torch::manual_seed(2);
  const int64_t B = 16, H = 2, Q = 24, K = 32, D = 8;
  ScoreTerms terms;
  terms.query = torch::randn({B, H, Q, D});
  terms.key = torch::randn({B, H, K, D});
  const auto bias0 = torch::randn({H, Q, K});
  const auto v = torch::randn({B, H, K, D});
  const auto bias_grad = [&] {
    ScoreTerms t = terms;
    t.bias = bias0.clone().requires_grad_();
    return torch::autograd::grad({fused_attention(t, v, K - Q).sum()}, {t.bias})[0];
  };
  const auto first = bias_grad();
  for (int repeat = 0; repeat < 20; ++repeat)
    ASSERT_TRUE(torch::equal(bias_grad(), first)) << "repeat " << repeat;
}

// One training step's gradients of every parameter (batch 8 x 64 tokens: 16 blocks of the
// loss's rows; memory where the encoding takes it; dropout off, so only the threads could
// make two passes differ), at 2 and at 4 threads, ten times over: each time the same to the
// last bit, for every encoding and with the adaptive softmax.
class SameGradients : public ::testing::TestWithParam<std::tuple<PosEncoding, bool>> {};

TEST_P(SameGradients, EveryParameterRepeatsBitForBit) {
  const auto [encoding, adaptive] = GetParam();
  constexpr int64_t kVocab = 11;
  torch::manual_seed(3);
  const ModelConfig config = testing::tiny_model(encoding);
  TransformerLM model(adaptive ? testing::with_adaptive(config) : config, kVocab);
  model->train();
  const auto tokens = torch::randint(kVocab, {8, 64}, torch::kLong);
  const auto targets = torch::randint(kVocab, {8, 64}, torch::kLong);
  Memory memory;
  if (encoding_traits(encoding).takes_memory) {
    torch::NoGradGuard no_grad;
    ForwardOptions keep;
    keep.keep_memory = 16;
    memory = model->forward(tokens.narrow(1, 0, 16), {}, keep).memory;
  }
  const auto gradients = [&] {
    ForwardOptions options;
    options.targets = targets;
    model->zero_grad();
    model->forward(tokens, memory, options).nll.mean().backward();
    std::vector<torch::Tensor> out;
    for (const auto& p : model->parameters())
      out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    return out;
  };
  for (const int threads : {2, 4}) {
    ThreadCount set(threads);
    const auto first = gradients();
    for (int repeat = 0; repeat < 10; ++repeat) {
      const auto again = gradients();
      const auto names = model->named_parameters().keys();
      for (size_t i = 0; i < first.size(); ++i) {
        if (!first[i].defined()) continue;
        ASSERT_TRUE(torch::equal(again[i], first[i]))
            << names[i] << " at " << threads << " threads, repeat " << repeat;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, SameGradients,
                         ::testing::Combine(::testing::ValuesIn(testing::all_encodings()),
                                            ::testing::Bool()),
                         testing::EncodingAdaptiveName());

// Every step 1..n logged, bit for bit the same.
void expect_same_losses(const std::map<int64_t, double>& expected,
                        const std::map<int64_t, double>& actual, int64_t n) {
  ASSERT_EQ(expected.size(), static_cast<size_t>(n));
  ASSERT_EQ(actual.size(), static_cast<size_t>(n));
  for (const auto& [step, loss] : expected) EXPECT_EQ(actual.at(step), loss) << "step " << step;
}

// The tiny config at 2 threads with 8 rows of 32 tokens: 8 blocks of the loss, 4 a thread.
TEST(SameRunAtFixedThreads, TwoTrainingsAndAResumeLogTheSameLosses) {
  const std::string root = fresh_dir("same_run_two_threads");
  auto config = tiny_config(write_tiny_corpus(root + "/corpus"));
  config.merge_patch(nlohmann::json::parse(R"({"train": {"threads": 2, "batch_size": 8,
      "tgt_len": 32, "mem_len": 32, "max_steps": 8, "eval_interval": 0}})"));
  const std::string config_path = write_config(root + "/config.json", config);
  constexpr int64_t kSteps = 8;
  std::vector<std::map<int64_t, double>> runs;
  for (const char* name : {"a", "b"}) {
    const auto r = run_txl({"train", "--config", config_path, "--run-dir", root + "/" + name});
    ASSERT_EQ(r.code, 0) << r.output;
    runs.push_back(read_losses(root + "/" + name));
  }
  expect_same_losses(runs[0], runs[1], kSteps);
  const std::string stopped = root + "/stopped";
  const auto stop = run_txl({"train", "--config", config_path, "--run-dir", stopped},
                            {"TXL_INJECT_STOP_AT_STEP=4"});
  ASSERT_EQ(stop.code, 130) << stop.output;
  const auto resumed = run_txl({"train", "--resume", stopped});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  expect_same_losses(runs[0], read_losses(stopped), kSteps);
}

}  // namespace
}  // namespace txl
