// LibTorch's scaled_dot_product_attention behind the seam (model/sdpa_attention.h), run on
// the CPU against the operator path (materialize, mask, softmax, matmul) for every encoding,
// with and without memory: outputs and the gradients of queries, keys, values and the
// encoding's own parameters (the relative encodings' shifted term and the learned biases go
// to the operator as a mask that takes a gradient).
// Skipped, saying so, where LibTorch is older than 2.1 (Debian 12's 1.13).
#include "txl/model/sdpa_attention.h"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"
#include "txl/model/positional.h"
#include "txl/platform/torch_compat.h"

namespace txl {
namespace {

class Sdpa : public ::testing::TestWithParam<std::tuple<PosEncoding, int64_t, int64_t>> {};

TEST_P(Sdpa, EqualsTheOperatorPath) {
  const auto [encoding, q_len, m_len] = GetParam();
  if (!kHasScaledDotProductAttention)
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no scaled_dot_product_attention";
  torch::manual_seed(9);
  const auto c = testing::tiny_model(encoding);
  auto score = make_position_score(c);
  {
    torch::NoGradGuard no_grad;  // off the initial values, so every term matters
    for (auto& p : score->parameters()) p.add_(torch::randn_like(p) * 0.3);
  }
  const int64_t k_len = q_len + m_len;
  auto q = torch::randn({2, c.n_head, q_len, c.d_head}).requires_grad_();
  auto k = torch::randn({2, c.n_head, k_len, c.d_head}).requires_grad_();
  auto v = torch::randn({2, c.n_head, k_len, c.d_head}).requires_grad_();
  PositionContext pos;
  pos.mem_len = m_len;
  pos.train_len = k_len;
  pos.sinusoids = relative_sinusoids(k_len, c.d_model, 0);
  std::vector<torch::Tensor> inputs{q, k, v};
  for (const auto& p : score->parameters()) inputs.push_back(p);
  // Each path its own terms (own graph): the first gradient frees what it went through.
  auto s = materialize(score->terms(q, k, pos));
  s.masked_fill_(causal_mask(q_len, m_len), -std::numeric_limits<float>::infinity());
  const auto expected = torch::matmul(torch::softmax(s, -1), v);
  const auto got = sdpa_attention(score->terms(q, k, pos), v, m_len);
  EXPECT_LT(testing::max_abs_diff(got, expected), 1e-5);
  const auto w = torch::randn_like(expected);
  const auto g_want = torch::autograd::grad({(expected * w).sum()}, inputs, {}, false, false,
                                            /*allow_unused=*/true);
  const auto g_got = torch::autograd::grad({(got * w).sum()}, inputs, {}, false, false,
                                           /*allow_unused=*/true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(g_got[i].defined(), g_want[i].defined()) << "input " << i;
    if (g_want[i].defined()) EXPECT_LT(testing::max_abs_diff(g_got[i], g_want[i]), 1e-5) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, Sdpa,
                         ::testing::Combine(::testing::ValuesIn(testing::all_encodings()),
                                            ::testing::Values(1, 6),   // Q
                                            ::testing::Values(0, 4)),  // M
                         [](const auto& info) {
                           return std::string(encoding_traits(std::get<0>(info.param)).name) +
                                  "_Q" + std::to_string(std::get<1>(info.param)) + "_M" +
                                  std::to_string(std::get<2>(info.param));
                         });

TEST(Sdpa, OnTheCpuTheFusedPassRunsInstead) {
  auto q = torch::zeros({1, 1, 2, 4});
  // On the CPU the fused pass runs instead, whatever LibTorch has.
  EXPECT_FALSE(sdpa_attention_applies({q, q, torch::zeros({1, 1, 2, 3}), {}}, q));  // shifted
  EXPECT_FALSE(sdpa_attention_applies({q, q, {}, {}}, q));
}

}  // namespace
}  // namespace txl
