// The row kernels (model/vector_kernels.h) in every instruction-set copy this CPU can run:
// fast_exp against exp in double, causal_softmax against LibTorch's softmax of the masked
// logits, the loss's rows against logsumexp and softmax; and the choice of copy over the flag
// sets of CPUs this one is not.
#include "txl/model/vector_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"
#include "txl/model/positional.h"

namespace txl {
namespace {

// The copies this CPU can run; the others are skipped with a message.
std::vector<VectorIsa> runnable_copies() {
  std::vector<VectorIsa> out = {VectorIsa::kBaseline};
  const auto mine = vector_isa_for(detect_cpu_flags());
  if (mine == VectorIsa::kAvx2 || mine == VectorIsa::kAvx512) out.push_back(VectorIsa::kAvx2);
  if (mine == VectorIsa::kAvx512) out.push_back(VectorIsa::kAvx512);
  return out;
}

void note_skipped_copies() {
  if (runnable_copies().size() < 3)
    std::printf("[ note ] this CPU cannot run every copy; tested: %zu of 3 (%s is its widest)\n",
                runnable_copies().size(), to_string(vector_isa()));
}

TEST(FastExp, WithinFourUlpsOfExpEveryCopy) {
  note_skipped_copies();
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-87.0f * static_cast<float>(i) / 200000.0f);
  for (float v : {0.0f, -1e-8f, -0.34657359f, -0.6931472f, -1.0f, -86.99f}) x.push_back(v);
  for (const auto isa : runnable_copies()) {
    std::vector<float> y(x.size());
    fast_exp(x.data(), y.data(), static_cast<int64_t>(x.size()), isa);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      worst = std::max(worst, std::abs(y[i] - want) / want);
    }
    EXPECT_LT(worst, 4 * std::numeric_limits<float>::epsilon()) << to_string(isa);
  }
  // Below the range: clamped to exp(-87), not 0, not a denormal or garbage.
  float low = -1000.0f, out = 0;
  fast_exp(&low, &out, 1);
  EXPECT_NEAR(out, std::exp(-87.0), 1e-44);
}

TEST(CausalSoftmax, EqualsSoftmaxOfTheMaskedLogitsEveryCopy) {
  for (const auto isa : runnable_copies()) {
    for (const int64_t rows : {1, 5, 17}) {
      for (const int64_t offset : {0, 3, 40}) {
        const int64_t cols = rows + offset;
        // Large logits too: the max shift must keep exp in range.
        auto s = torch::randn({rows, cols}) * (rows == 5 ? 40.0 : 3.0);
        auto expected = torch::softmax(
            s.masked_fill(causal_mask(rows, offset), -std::numeric_limits<float>::infinity()), 1);
        auto p = torch::full({rows, cols}, 7.0f);  // the masked part must be written
        causal_softmax(s.data_ptr<float>(), p.data_ptr<float>(), rows, cols, cols, offset, isa);
        EXPECT_LT(testing::max_abs_diff(p, expected), 1e-6)
            << to_string(isa) << " rows " << rows << " offset " << offset;
        // In place, and rows further apart than they are long.
        auto wide = torch::zeros({rows, cols + 5});
        wide.narrow(1, 0, cols).copy_(s);
        causal_softmax(wide.data_ptr<float>(), wide.data_ptr<float>(), rows, cols, cols + 5, offset,
                       isa);
        EXPECT_LT(testing::max_abs_diff(wide.narrow(1, 0, cols), expected), 1e-6);
      }
    }
  }
}

TEST(CausalSoftmax, MaskedLogitsAreNeverRead) {
  const int64_t rows = 4, offset = 2, cols = 6;
  auto s = torch::randn({rows, cols});
  auto expected = torch::empty({rows, cols});
  causal_softmax(s.data_ptr<float>(), expected.data_ptr<float>(), rows, cols, cols, offset);
  s.masked_fill_(causal_mask(rows, offset), std::numeric_limits<float>::quiet_NaN());
  auto p = torch::empty({rows, cols});
  causal_softmax(s.data_ptr<float>(), p.data_ptr<float>(), rows, cols, cols, offset);
  EXPECT_TRUE(torch::equal(p, expected));
}

TEST(LossRows, LogSumExpAndScaledSoftmaxEqualLibTorchEveryCopy) {
  const int64_t rows = 9, vocab = 37, ld = 40;
  auto z = torch::randn({rows, ld}) * 6.0;
  z[3].fill_(-1000.0f);
  z[3][5] = 2.0f;  // one row whose other terms are all negligible
  const auto zv = z.narrow(1, 0, vocab);
  const auto want_lse = torch::logsumexp(zv.to(torch::kFloat64), 1);
  const auto scale = torch::rand({rows}) - 0.5;
  const auto want_p = torch::softmax(zv.to(torch::kFloat64), 1) * scale.unsqueeze(1);
  for (const auto isa : runnable_copies()) {
    auto lse = torch::empty({rows});
    auto scratch = torch::empty({vocab});
    log_sum_exp_rows(z.data_ptr<float>(), rows, vocab, ld, lse.data_ptr<float>(),
                     scratch.data_ptr<float>(), isa);
    EXPECT_LT(testing::max_abs_diff(lse, want_lse), 2e-6) << to_string(isa);
    auto p = torch::empty({rows, vocab});
    scaled_softmax_rows(z.data_ptr<float>(), lse.data_ptr<float>(), scale.data_ptr<float>(), rows,
                        vocab, ld, p.data_ptr<float>(), vocab, isa);
    EXPECT_LT(testing::max_abs_diff(p, want_p), 1e-6) << to_string(isa);
    EXPECT_EQ(p[3][4].item<float>(), 0.0f);  // e^-1002: exactly 0, no denormal
  }
  // With a bias: the rows z + bias, never written out.
  const auto bias = torch::randn({vocab}) * 4.0;
  const auto zb = zv + bias;
  const auto want_lse_b = torch::logsumexp(zb.to(torch::kFloat64), 1);
  const auto want_p_b = torch::softmax(zb.to(torch::kFloat64), 1) * scale.unsqueeze(1);
  for (const auto isa : runnable_copies()) {
    auto lse = torch::empty({rows});
    auto scratch = torch::empty({vocab});
    const auto z_before = z.clone();
    log_sum_exp_rows(z.data_ptr<float>(), bias.data_ptr<float>(), rows, vocab, ld,
                     lse.data_ptr<float>(), scratch.data_ptr<float>(), isa);
    EXPECT_LT(testing::max_abs_diff(lse, want_lse_b), 2e-6) << to_string(isa);
    auto p = torch::empty({rows, vocab});
    scaled_softmax_rows(z.data_ptr<float>(), bias.data_ptr<float>(), lse.data_ptr<float>(),
                        scale.data_ptr<float>(), rows, vocab, ld, p.data_ptr<float>(), vocab, isa);
    EXPECT_LT(testing::max_abs_diff(p, want_p_b), 1e-6) << to_string(isa);
    EXPECT_TRUE(torch::equal(z, z_before)) << to_string(isa);
  }
}

// ds = p (dp - rowsum(dp p)) over the visible entries, against LibTorch's softmax backward of
// the masked rows; the rest of each row (up to cols) is 0 whatever was there, and the lengths
// straddle the 16-lane blocks of the dot product.
TEST(SoftmaxBackwardRows, EqualsLibTorchsSoftmaxBackwardEveryCopy) {
  const int64_t rows = 3, cols = 40, ld = 45;
  for (const auto isa : runnable_copies()) {
    for (const int64_t n : {1, 15, 16, 17, 33, 40}) {
      const auto p = torch::softmax(torch::randn({rows, n}) * 3.0, 1);
      const auto dp = torch::randn({rows, n});
      const auto expected = at::_softmax_backward_data(dp, p, 1, torch::kFloat32);
      auto p_wide = torch::zeros({rows, ld}), dp_wide = torch::randn({rows, ld});
      p_wide.narrow(1, 0, n).copy_(p);
      dp_wide.narrow(1, 0, n).copy_(dp);
      auto ds = torch::full({rows, ld}, 7.0f);
      softmax_backward_rows(p_wide.data_ptr<float>(), dp_wide.data_ptr<float>(),
                            ds.data_ptr<float>(), rows, n, cols, ld, isa);
      EXPECT_LT(testing::max_abs_diff(ds.narrow(1, 0, n), expected), 1e-6)
          << to_string(isa) << " n " << n;
      if (n < cols)
        EXPECT_EQ(ds.narrow(1, n, cols - n).abs().max().item<float>(), 0.0f) << to_string(isa);
      EXPECT_EQ(ds.narrow(1, cols, ld - cols).min().item<float>(), 7.0f) << "past cols: untouched";
    }
  }
}

TEST(VectorIsa, WidestCopyTheFlagsAllow) {
  const auto pick = [](const char* flags) { return vector_isa_for(parse_cpu_flags(flags)); };
  // Intel with AVX-512 and AMX; AMD Zen 5; AVX2-only AMD; AVX without AVX2; half an AVX-512.
  EXPECT_EQ(pick("avx avx2 fma avx512f avx512bw avx512dq avx512vl avx512cd amx_bf16"),
            VectorIsa::kAvx512);
  EXPECT_EQ(pick("avx avx2 fma avx512f avx512bw avx512dq avx512vl avx512_bf16"),
            VectorIsa::kAvx512);
  EXPECT_EQ(pick("avx avx2 fma"), VectorIsa::kAvx2);
  EXPECT_EQ(pick("avx"), VectorIsa::kBaseline);
  EXPECT_EQ(pick("avx avx2"), VectorIsa::kBaseline);  // no FMA
  EXPECT_EQ(pick("avx avx2 fma avx512f"), VectorIsa::kAvx2);
  EXPECT_EQ(pick(""), VectorIsa::kBaseline);
}

}  // namespace
}  // namespace txl
