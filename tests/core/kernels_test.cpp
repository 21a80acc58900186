// The model's own kernels (model/kernels.h) against the LibTorch operations they replace:
// same values and gradients; dropout's statistics and repeatability; rel_shift_padded
// against rel_shift.
#include "txl/model/kernels.h"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"
#include "txl/model/positional.h"
#include "txl/platform/runtime.h"

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

// affine against torch::linear in float64: values and the gradients of x, weight and bias,
// with the weight a row range of a larger matrix (as the memory path's q and kv use it).
TEST(Affine, MatchesLinearWithGradientsForWeightViewsWithAndWithoutBias) {
  torch::manual_seed(2);
  const auto full = torch::randn({30, 24});
  // affine as this CPU runs it, and its oneDNN path whatever the CPU.
  for (const auto& [path, fn] :
       {std::pair{"affine", &affine}, std::pair{"affine_on_onednn", &affine_on_onednn}})
    for (const bool with_bias : {false, true}) {
      SCOPED_TRACE(path);
      auto x = torch::randn({3, 7, 24}).requires_grad_(true);
      auto w_all = full.clone().requires_grad_(true);
      auto bias = with_bias ? torch::randn({20}).requires_grad_(true) : torch::Tensor();
      auto y = fn(x, w_all.narrow(0, 10, 20), bias);  // [3, 7, 20]
      const auto g = torch::randn(y.sizes());
      std::vector<torch::Tensor> inputs = {x, w_all};
      if (with_bias) inputs.push_back(bias);
      const auto grads = torch::autograd::grad({y}, inputs, {g});

      std::vector<torch::Tensor> inputs64;
      for (const auto& t : inputs)
        inputs64.push_back(t.detach().to(torch::kFloat64).requires_grad_());
      const auto want = torch::linear(inputs64[0], inputs64[1].narrow(0, 10, 20),
                                      with_bias ? inputs64[2] : torch::Tensor());
      const auto want_grads = torch::autograd::grad({want}, inputs64, {g.to(torch::kFloat64)});
      ASSERT_EQ(y.sizes(), want.sizes());
      EXPECT_LT(max_abs_diff(y, want), 1e-4) << "bias " << with_bias;
      for (size_t i = 0; i < grads.size(); ++i)
        EXPECT_LT(max_abs_diff(grads[i], want_grads[i]), 1e-4)
            << "input " << i << ", bias " << with_bias;
      EXPECT_EQ(max_abs_diff(grads[1].narrow(0, 0, 10), torch::zeros({10, 24})), 0.0)
          << "rows outside the view get no gradient";
    }
}

TEST(Affine, UnderAutocastGivesWhatLinearGives) {
  const auto x = torch::randn({4, 8});
  const auto w = torch::randn({5, 8});
  AutocastGuard bf16(Precision::kBf16, torch::kCPU);
  const auto y = affine(x, w);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(max_abs_diff(y, torch::linear(x, w)), 0.0);
}

TEST(Dropout, DropsAboutPAndScalesTheRest) {
  torch::manual_seed(2);
  auto x = torch::ones({1000, 101});  // odd length: the vector loop leaves a tail
  auto y = apply_dropout(x, 0.3, /*training=*/true);
  const double dropped = (y == 0).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(dropped, 0.3, 0.01);
  EXPECT_LT(max_abs_diff(y.masked_select(y != 0), torch::full({1}, 1.0 / 0.7)), 1e-6);
  // Inactive: identity, the same tensor.
  EXPECT_TRUE(apply_dropout(x, 0.3, /*training=*/false).is_same(x));
  EXPECT_TRUE(apply_dropout(x, 0.0, /*training=*/true).is_same(x));
}

// The keep decision written out from its formula (dropout.h), one element at a time; mix32 is
// the formula's name for Wellons' "lowbias32", as in the kernel.
uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
uint32_t formula_hash(uint64_t seed, uint64_t index) {
  const uint32_t k0 = static_cast<uint32_t>(seed);
  const uint32_t k1 = static_cast<uint32_t>(seed >> 32) + mix32(static_cast<uint32_t>(index >> 32));
  return mix32(mix32(static_cast<uint32_t>(index) ^ k0) + k1);
}

TEST(Dropout, HashedKernelEqualsItsFormulaElementByElement) {
  const uint64_t seed = 0x0123456789ABCDEFull;
  for (uint64_t index : {0ull, 1ull, 77777ull, (1ull << 32) - 1, 1ull << 32, (5ull << 32) + 9})
    EXPECT_EQ(dropout_hash(seed, index), formula_hash(seed, index)) << "index " << index;
  // Large enough for several chunks per thread; an odd length leaves a vector tail.
  const auto x = torch::randn({70001});
  const double p = 0.3;
  const auto drop_below = static_cast<uint32_t>(p * 4294967296.0);
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto xt = x.to(dtype);
    for (const bool relu : {false, true}) {
      const auto out = hashed_dropout(xt, p, relu, seed).to(torch::kFloat32);
      const auto in = xt.to(torch::kFloat32);
      const float* o = out.data_ptr<float>();
      const float* v = in.data_ptr<float>();
      int64_t wrong = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const bool keep =
            formula_hash(seed, static_cast<uint64_t>(i)) >= drop_below && (!relu || v[i] > 0.0f);
        const float want =
            keep ? static_cast<float>(c10::BFloat16(v[i] * scale).operator float()) : 0.0f;
        const float want_exact = keep ? v[i] * scale : 0.0f;
        if (o[i] != (dtype == torch::kFloat32 ? want_exact : want)) ++wrong;
      }
      EXPECT_EQ(wrong, 0) << "dtype " << dtype << ", relu " << relu;
    }
  }
}

TEST(Dropout, DroppedAndGatedInfinitiesBecomeZeroNotNan) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto x = torch::tensor({-inf, inf}).repeat({500});  // [1000]
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto xt = x.to(dtype);
    const auto relu = relu_dropout(xt, 0.5, true).to(torch::kFloat32);
    const auto plain = apply_dropout(xt, 0.5, true).to(torch::kFloat32);
    EXPECT_FALSE(relu.isnan().any().item<bool>()) << dtype;
    EXPECT_FALSE(plain.isnan().any().item<bool>()) << dtype;
    EXPECT_TRUE((relu.slice(0, 0, 1000, 2) == 0).all().item<bool>()) << "ReLU gates -inf to 0";
    const auto kept = (plain != 0).to(torch::kFloat64).mean().item<double>();
    EXPECT_GT(kept, 0.4) << dtype;
    EXPECT_LT(kept, 0.6) << dtype;
  }
}

TEST(Dropout, NeighboursAndConsecutiveCallsDropIndependently) {
  // P(both dropped) = p^2 for adjacent elements and for the same element in two calls.
  torch::manual_seed(11);
  const double p = 0.3;
  const auto ones = torch::ones({1 << 20});
  const auto a = apply_dropout(ones, p, true) == 0;
  const auto b = apply_dropout(ones, p, true) == 0;
  const auto rate = [](const torch::Tensor& t) {
    return t.to(torch::kFloat64).mean().item<double>();
  };
  const int64_t n = a.numel();
  EXPECT_NEAR(rate(a), p, 0.003);
  EXPECT_NEAR(rate(a.narrow(0, 0, n - 1) & a.narrow(0, 1, n - 1)), p * p, 0.003);
  EXPECT_NEAR(rate(a & b), p * p, 0.003);
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

// The loss against the formula written out (log_softmax, then the target's entry), values
// and gradient, over rows that span several blocks and end in a partial one, for float32
// logits, bfloat16 logits (as autocast makes them: float32 loss, gradient in bfloat16) and
// logits that are a non-contiguous view.
TEST(TokenNll, MatchesTheFormulaOverSeveralRowBlocksInEachDtype) {
  torch::manual_seed(6);
  const int64_t rows = 75, vocab = 13;
  auto base = 4 * torch::randn({rows, vocab});
  auto targets = torch::randint(vocab, {rows}, torch::kLong);
  auto weights = torch::rand({rows});
  auto oracle = [&](const torch::Tensor& z) {  // z [N, V] float32 leaf
    auto logp = torch::log_softmax(z, 1);
    return -logp.gather(1, targets.unsqueeze(1)).squeeze(1);
  };
  auto z_ref = base.clone().requires_grad_(true);
  auto ref = oracle(z_ref);
  auto g_ref = torch::autograd::grad({(ref * weights).sum()}, {z_ref})[0];

  auto fp32 = base.clone().requires_grad_(true);
  auto nll = token_nll(fp32, targets);
  EXPECT_EQ(nll.scalar_type(), torch::kFloat32);
  EXPECT_LT(max_abs_diff(nll, ref), 1e-5);
  EXPECT_LT(max_abs_diff(torch::autograd::grad({(nll * weights).sum()}, {fp32})[0], g_ref), 1e-6);

  auto transposed = base.t().contiguous().requires_grad_(true);  // [V, N]
  auto strided = token_nll(transposed.t(), targets);
  EXPECT_LT(max_abs_diff(strided, ref), 1e-5);
  auto g_strided = torch::autograd::grad({(strided * weights).sum()}, {transposed})[0];
  EXPECT_LT(max_abs_diff(g_strided.t(), g_ref), 1e-6);

  // bfloat16: the loss of the rounded logits, in float32; the gradient rounded to bfloat16.
  auto bf16 = base.to(torch::kBFloat16).requires_grad_(true);
  auto z_rounded = bf16.detach().to(torch::kFloat32).requires_grad_(true);
  auto ref_rounded = oracle(z_rounded);
  auto g_rounded = torch::autograd::grad({(ref_rounded * weights).sum()}, {z_rounded})[0];
  auto nll_bf16 = token_nll(bf16, targets);
  EXPECT_EQ(nll_bf16.scalar_type(), torch::kFloat32);
  EXPECT_LT(max_abs_diff(nll_bf16, ref_rounded), 1e-5);
  auto g_bf16 = torch::autograd::grad({(nll_bf16 * weights).sum()}, {bf16})[0];
  EXPECT_EQ(g_bf16.scalar_type(), torch::kBFloat16);
  EXPECT_LT(max_abs_diff(g_bf16.to(torch::kFloat32), g_rounded), 4e-3);
}

// A bias [V] in the loss (the output layer's, left out of its product): the loss and both
// gradients equal those of the logits with the bias added first, over several row blocks,
// with and without gradients, for float32 (the row kernels), strided and bfloat16 logits
// (LibTorch's operators), and a bias that changes the result (not all zero).
TEST(TokenNll, BiasInTheLossEqualsTheBiasAddedFirst) {
  torch::manual_seed(8);
  const int64_t rows = 75, vocab = 13;
  auto base = 4 * torch::randn({rows, vocab});
  auto bias_values = 3 * torch::randn({vocab});
  auto targets = torch::randint(vocab, {rows}, torch::kLong);
  auto weights = torch::rand({rows});
  const auto check = [&](const torch::Tensor& leaf, const torch::Tensor& logits, double tol_grad,
                         const char* what) {
    SCOPED_TRACE(what);
    auto bias = bias_values.clone().requires_grad_(true);
    auto nll = token_nll(logits, targets, bias);
    const auto grads = torch::autograd::grad({(nll * weights).sum()}, {leaf, bias});
    auto ref_leaf = leaf.detach().clone().requires_grad_(true);
    auto ref_bias = bias_values.clone().requires_grad_(true);
    auto ref_logits = leaf.size(0) == rows ? ref_leaf : ref_leaf.t();
    auto ref = token_nll(ref_logits.to(torch::kFloat32) + ref_bias, targets);
    const auto ref_grads = torch::autograd::grad({(ref * weights).sum()}, {ref_leaf, ref_bias});
    EXPECT_LT(max_abs_diff(nll, ref), 1e-5);
    EXPECT_LT(max_abs_diff(grads[0].to(torch::kFloat32), ref_grads[0].to(torch::kFloat32)),
              tol_grad);
    EXPECT_LT(max_abs_diff(grads[1], ref_grads[1]), 1e-5);
    EXPECT_GT(max_abs_diff(nll, token_nll(logits.detach(), targets)), 1e-2);  // the bias counts
    torch::NoGradGuard no_grad;
    EXPECT_LT(max_abs_diff(token_nll(logits, targets, bias), ref), 1e-5);
  };
  auto fp32 = base.clone().requires_grad_(true);
  check(fp32, fp32, 1e-6, "float32");
  auto transposed = base.t().contiguous().requires_grad_(true);  // [V, N]
  check(transposed, transposed.t(), 1e-6, "strided float32");
  auto bf16 = base.to(torch::kBFloat16).requires_grad_(true);
  check(bf16, bf16, 4e-3, "bfloat16");
  EXPECT_THROW(token_nll(base, targets, torch::zeros({vocab + 1})), c10::Error);
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
