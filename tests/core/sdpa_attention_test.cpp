// LibTorch's scaled_dot_product_attention behind the seam (model/sdpa_attention.h), run on
// the CPU against the operator path (materialize, mask, softmax, matmul) for the encodings it
// takes, with and without memory: outputs and the gradients of queries, keys and values.
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
  const int64_t k_len = q_len + m_len;
  auto q = torch::randn({2, c.n_head, q_len, c.d_head}).requires_grad_();
  auto k = torch::randn({2, c.n_head, k_len, c.d_head}).requires_grad_();
  auto v = torch::randn({2, c.n_head, k_len, c.d_head}).requires_grad_();
  PositionContext pos;
  pos.mem_len = m_len;
  pos.train_len = k_len;
  // Each path its own terms (own graph): the first gradient frees what it went through.
  const auto terms = score->terms(q, k, pos);
  ASSERT_FALSE(terms.shifted.defined());
  auto s = materialize(terms);
  s.masked_fill_(causal_mask(q_len, m_len), -std::numeric_limits<float>::infinity());
  const auto expected = torch::matmul(torch::softmax(s, -1), v);
  const auto got = sdpa_attention(score->terms(q, k, pos), v, m_len);
  EXPECT_LT(testing::max_abs_diff(got, expected), 1e-5);
  const auto w = torch::randn_like(expected);
  const auto g_want = torch::autograd::grad({(expected * w).sum()}, {q, k, v});
  const auto g_got = torch::autograd::grad({(got * w).sum()}, {q, k, v});
  for (size_t i = 0; i < 3; ++i) EXPECT_LT(testing::max_abs_diff(g_got[i], g_want[i]), 1e-5) << i;
}

INSTANTIATE_TEST_SUITE_P(
    Encodings, Sdpa,
    ::testing::Combine(::testing::Values(PosEncoding::kAbsolute, PosEncoding::kNope,
                                         PosEncoding::kRope, PosEncoding::kAlibi),
                       ::testing::Values(1, 6),   // Q
                       ::testing::Values(0, 4)),  // M
    [](const auto& info) {
      return std::string(encoding_traits(std::get<0>(info.param)).name) + "_Q" +
             std::to_string(std::get<1>(info.param)) + "_M" +
             std::to_string(std::get<2>(info.param));
    });

TEST(Sdpa, TakesOnlyWhatItCanExpress) {
  auto q = torch::zeros({1, 1, 2, 4});
  EXPECT_FALSE(sdpa_attention_applies({q, q, torch::zeros({1, 1, 2, 3}), {}}, q));  // shifted
  // On the CPU the fused pass runs instead, whatever LibTorch has.
  EXPECT_FALSE(sdpa_attention_applies({q, q, {}, {}}, q));
  EXPECT_THROW(sdpa_attention({q, q, torch::zeros({1, 1, 2, 3}), {}}, q, 0), c10::Error);
}

}  // namespace
}  // namespace txl
