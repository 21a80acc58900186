// The relative encoding's kept distance keys (model/encodings/relative.h): evaluation reuses
// W_r R across passes. Each answer must equal the projection computed afresh to the last bit,
// whatever was kept before: fewer keys, other sinusoids (another clamp_len), weights changed in
// place (a new version) or behind the version counter after a training-mode pass (which drops
// what was kept), and a size past the per-layer budget.
#include <gtest/gtest.h>

#include "txl/model/encodings/relative.h"
#include "txl/model/kernels.h"
#include "txl/model/positional.h"

namespace txl {
namespace {

constexpr int64_t kModel = 16, kHeads = 2, kHead = 8;

torch::Tensor sinusoids(int64_t keys, int64_t clamp_len = 0) {
  return relative_sinusoids(keys, kModel, clamp_len, torch::TensorOptions());  // [K, C]
}

torch::Tensor fresh(SinusoidRelativeScore& score, const torch::Tensor& s) {
  return torch::matmul(s, score.w_r->weight.t());  // [K, H*D], the formula
}

void expect_fresh(SinusoidRelativeScore& score, const torch::Tensor& s, const char* what) {
  const auto got = score.projected_keys(s);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{s.size(0), kHeads * kHead})) << what;
  EXPECT_LT((got - fresh(score, s)).abs().max().item<double>(), 1e-6) << what;
  // The very product a pass without kept keys computes, bit for bit.
  EXPECT_TRUE(torch::equal(got, affine(s, score.w_r->weight))) << what;
}

TEST(KeptDistanceKeys, EveryAnswerEqualsTheProjectionComputedAfresh) {
  torch::manual_seed(3);
  SinusoidRelativeScore score(kModel, kHeads, kHead, 0.1);
  score.eval();
  torch::NoGradGuard no_grad;
  expect_fresh(score, sinusoids(40), "first, 40 keys");
  // The same sinusoids again: the kept product itself.
  EXPECT_EQ(score.projected_keys(sinusoids(40)).data_ptr<float>(),
            score.projected_keys(sinusoids(40)).data_ptr<float>());
  expect_fresh(score, sinusoids(25), "25 keys after 40");
  expect_fresh(score, sinusoids(40), "40 keys again after 25");
  expect_fresh(score, sinusoids(40, /*clamp_len=*/10), "another clamp_len");
  expect_fresh(score, sinusoids(60), "more keys than kept");
  score.w_r->weight.mul_(1.5);  // in place: a new version
  expect_fresh(score, sinusoids(60), "weights changed in place");
}

TEST(KeptDistanceKeys, ATrainingPassDropsWhatWasKept) {
  torch::manual_seed(4);
  SinusoidRelativeScore score(kModel, kHeads, kHead, 0.1);
  {
    torch::NoGradGuard no_grad;
    score.eval();
    score.projected_keys(sinusoids(30));
    score.train();
    score.projected_keys(sinusoids(30));  // training mode: nothing kept
    // Weights changed behind the version counter (as a fused optimizer writes them).
    float* w = score.w_r->weight.data_ptr<float>();
    for (int64_t i = 0; i < score.w_r->weight.numel(); ++i) w[i] += 0.25f;
    score.eval();
    expect_fresh(score, sinusoids(30), "after a training pass and a raw update");
  }
  // With gradients on, each pass projects its own (and the product has a gradient).
  const auto with_grad = score.projected_keys(sinusoids(30));
  EXPECT_TRUE(with_grad.requires_grad());
}

TEST(KeptDistanceKeys, KeysPastTheBudgetAreNotKept) {
  torch::manual_seed(5);
  SinusoidRelativeScore score(kModel, kHeads, kHead, 0.1);
  score.eval();
  torch::NoGradGuard no_grad;
  const int64_t too_many = kKeptDistanceKeyBytes / (kHeads * kHead * 4) + 1;
  const auto a = score.projected_keys(sinusoids(too_many));
  const auto b = score.projected_keys(sinusoids(too_many));
  EXPECT_NE(a.data_ptr<float>(), b.data_ptr<float>());
  EXPECT_TRUE(torch::equal(a, b));
}

}  // namespace
}  // namespace txl
