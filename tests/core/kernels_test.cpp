// The model's own kernels (model/kernels.h) against the LibTorch operations they replace:
// same values and gradients; dropout's statistics and repeatability; rel_shift_padded
// against rel_shift.
#include "txl/model/kernels.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "txl/model/positional.h"

namespace txl {
namespace {

using testing::max_abs_diff;

// Restores LibTorch's thread count after a test that changes it.
struct ThreadCountGuard {
  int saved = at::get_num_threads();
  ~ThreadCountGuard() { at::set_num_threads(saved); }
};

// Values and both gradients of batched_matmul against torch::matmul, including a
// broadcast batch dimension and transposed (non-contiguous) operands.
void check_batched_matmul(torch::Tensor a, torch::Tensor b) {
  a = a.detach().requires_grad_(true);
  b = b.detach().requires_grad_(true);
  auto fast = batched_matmul(a, b);
  auto g = torch::randn(fast.sizes());
  auto [ga, gb] = [&] {
    auto grads = torch::autograd::grad({fast}, {a, b}, {g});
    return std::make_pair(grads[0], grads[1]);
  }();
  auto ref = torch::matmul(a, b);
  auto ref_grads = torch::autograd::grad({ref}, {a, b}, {g});
  ASSERT_EQ(fast.sizes(), ref.sizes());
  EXPECT_LT(max_abs_diff(fast, ref), 1e-4);
  EXPECT_LT(max_abs_diff(ga, ref_grads[0]), 1e-4);
  EXPECT_LT(max_abs_diff(gb, ref_grads[1]), 1e-4);
  EXPECT_EQ(gb.sizes(), b.sizes());
}

TEST(BatchedMatmul, MatchesMatmulWithGradients) {
  ThreadCountGuard keep_threads;
  torch::manual_seed(1);
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    check_batched_matmul(torch::randn({3, 2, 5, 4}), torch::randn({3, 2, 4, 6}));
    // [B, H, Q, D] @ [1, H, D, K+1]: the position term's broadcast over the batch.
    check_batched_matmul(torch::randn({3, 2, 5, 4}),
                         torch::randn({2, 7, 4}).transpose(-1, -2).unsqueeze(0));
    // A head-interleaved layout like q's: [B, Q, H, D] viewed as [B, H, Q, D].
    check_batched_matmul(torch::randn({3, 5, 2, 4}).transpose(1, 2),
                         torch::randn({3, 6, 2, 4}).permute({0, 2, 3, 1}));
  }
}

TEST(Dropout, DropsAboutPAndScalesTheRest) {
  torch::manual_seed(2);
  auto x = torch::ones({1000, 101});  // odd row length: the pairwise draws cover a tail
  auto y = apply_dropout(x, 0.3, /*training=*/true);
  const double dropped = (y == 0).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(dropped, 0.3, 0.01);
  EXPECT_LT(max_abs_diff(y.masked_select(y != 0), torch::full({1}, 1.0 / 0.7)), 1e-6);
  // Inactive: identity, the same tensor.
  EXPECT_TRUE(apply_dropout(x, 0.3, /*training=*/false).is_same(x));
  EXPECT_TRUE(apply_dropout(x, 0.0, /*training=*/true).is_same(x));
}

TEST(Dropout, RepeatableUnderManualSeedAtAnyThreadCount) {
  ThreadCountGuard keep_threads;
  auto x = torch::randn({64, 333});
  at::set_num_threads(1);
  torch::manual_seed(3);
  auto one = apply_dropout(x, 0.5, true);
  at::set_num_threads(2);
  torch::manual_seed(3);
  auto two = apply_dropout(x, 0.5, true);
  EXPECT_TRUE(torch::equal(one, two));
  EXPECT_FALSE(torch::equal(apply_dropout(x, 0.5, true), two));  // the next call draws anew
}

TEST(Dropout, GradientIsTheSameMask) {
  torch::manual_seed(4);
  auto x = torch::randn({8, 9}, torch::requires_grad());
  auto y = apply_dropout(x, 0.4, true);
  y.sum().backward();
  EXPECT_LT(max_abs_diff(x.grad() * x, y), 1e-6);  // d y / d x = the (scaled) mask
}

TEST(Dropout, ReluDropoutEqualsDropoutOfRelu) {
  auto x = torch::randn({40, 33}, torch::requires_grad());
  torch::manual_seed(7);
  auto fused = relu_dropout(x, 0.25, true);
  auto g_fused = torch::autograd::grad({(fused * fused).sum()}, {x})[0];
  torch::manual_seed(7);  // the same seed, so the same keep pattern
  auto relu = torch::relu(x);
  auto plain = apply_dropout(relu, 0.25, true);
  auto g_plain = torch::autograd::grad({(plain * plain).sum()}, {x})[0];
  EXPECT_LT(max_abs_diff(fused, plain), 1e-6);
  EXPECT_LT(max_abs_diff(g_fused, g_plain), 1e-5);
  EXPECT_LT(max_abs_diff(relu_dropout(x, 0.25, false), torch::relu(x)), 1e-12);
}

TEST(TokenNll, EqualsCrossEntropyWithGradients) {
  torch::manual_seed(5);
  auto logits = (3 * torch::randn({6, 11})).requires_grad_(true);
  auto targets = torch::randint(11, {6}, torch::kLong);
  auto weights = torch::rand({6});
  auto nll = token_nll(logits, targets);
  auto ref = torch::nn::functional::cross_entropy(
      logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  EXPECT_LT(max_abs_diff(nll, ref), 1e-5);
  auto g = torch::autograd::grad({(nll * weights).sum()}, {logits})[0];
  auto g_ref = torch::autograd::grad({(ref * weights).sum()}, {logits})[0];
  EXPECT_LT(max_abs_diff(g, g_ref), 1e-6);
  // Without gradients (blocked rows): the same values, also past one block of rows.
  torch::NoGradGuard no_grad;
  auto big = torch::randn({600, 7});
  auto big_targets = torch::randint(7, {600}, torch::kLong);
  EXPECT_LT(
      max_abs_diff(token_nll(big, big_targets),
                   torch::nn::functional::cross_entropy(
                       big, big_targets,
                       torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))),
      1e-5);
}

TEST(RelShiftPadded, EqualsRelShiftOnValidEntriesForStridedBatches) {
  torch::manual_seed(6);
  const int64_t q = 5, m = 3, k = q + m;
  // A [B, H] batch laid out head-major ([H, B, Q, K+1] in memory), as a broadcast product
  // may produce: each [Q, K+1] matrix is contiguous, the leading strides are not.
  auto buffer = torch::randn({2, 3, q, k + 1}).transpose(0, 1);  // [3, 2, Q, K+1] view
  auto shifted = rel_shift_padded(buffer);                       // [3, 2, Q, K]
  auto expected = rel_shift(buffer.narrow(-1, 0, k).contiguous());
  for (int64_t i = 0; i < q; ++i) {
    EXPECT_LT(max_abs_diff(shifted.select(-2, i).narrow(-1, 0, m + i + 1),
                           expected.select(-2, i).narrow(-1, 0, m + i + 1)),
              1e-7)
        << "row " << i;
  }
}

}  // namespace
}  // namespace txl
