// rel_shift, sinusoids and the causal mask against hand-computed values, and both relative
// encodings' fast score path against a naive double loop over (i, j).
#include "txl/model/positional.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "txl/model/encodings/relative.h"
#include "txl/model/position_score.h"

namespace txl {
namespace {

using testing::max_abs_diff;

TEST(RelShift, AlignsDistanceColumnsToKeys) {
  for (auto [q, m] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 0}, {4, 0}, {3, 2}, {5, 7}, {6, 1}}) {
    const int64_t k = q + m;
    // x[i, c] encodes (query i, distance K-1-c).
    auto x = torch::empty({2, q, k});
    for (int64_t i = 0; i < q; ++i)
      for (int64_t c = 0; c < k; ++c)
        x.index_put_({torch::indexing::Slice(), i, c}, 1000.0 * i + (k - 1 - c));
    auto out = rel_shift(x);
    ASSERT_EQ(out.sizes(), x.sizes());
    for (int64_t i = 0; i < q; ++i)
      for (int64_t j = 0; j <= m + i; ++j)
        EXPECT_EQ(out[1][i][j].item<float>(), 1000.0f * i + (m + i - j))
            << "Q=" << q << " M=" << m << " i=" << i << " j=" << j;
  }
}

TEST(CausalMask, QueryISeesKeysUpToMemPlusI) {
  auto mask = causal_mask(3, 2);
  ASSERT_EQ(mask.sizes(), (std::vector<int64_t>{3, 5}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(mask[i][j].item<bool>(), j > 2 + i) << i << "," << j;
}

TEST(Sinusoids, RelativeRowsAreDistancesLargestFirstSinThenCos) {
  const int64_t c = 6;
  auto r = relative_sinusoids(4, c, /*clamp_len=*/0);
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{4, c}));
  for (int64_t row = 0; row < 4; ++row) {
    const double p = 3 - row;
    for (int64_t i = 0; i < c / 2; ++i) {
      const double f = std::pow(10000.0, -2.0 * i / c);
      EXPECT_NEAR(r[row][i].item<float>(), std::sin(p * f), 1e-6);
      EXPECT_NEAR(r[row][c / 2 + i].item<float>(), std::cos(p * f), 1e-6);
    }
  }
  auto clamped = relative_sinusoids(6, c, /*clamp_len=*/2);  // distances 5,4,3,2,1,0 -> 2,2,2,2,1,0
  EXPECT_LT(max_abs_diff(clamped[0], relative_sinusoids(3, c, 0)[0]), 1e-7);
}

TEST(Sinusoids, AbsoluteIsInterleavedSinCos) {
  const int64_t c = 8;
  auto pe = absolute_sinusoids(5, c);
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t i = 0; i < c / 2; ++i) {
      const double angle = t / std::pow(10000.0, 2.0 * i / c);
      EXPECT_NEAR(pe[t][2 * i].item<float>(), std::sin(angle), 1e-6);
      EXPECT_NEAR(pe[t][2 * i + 1].item<float>(), std::cos(angle), 1e-6);
    }
}

// Independent oracle: the relative key vector of head h at distance d, from the module's
// parameters and a direct formula (no rel_shift, no batched matmuls).
std::vector<double> oracle_distance_key(RelativeScore& score, const ModelConfig& c, int64_t h,
                                        int64_t d, int64_t clamp_len) {
  std::vector<double> key(c.d_head, 0.0);
  if (auto* s = dynamic_cast<SinusoidRelativeScore*>(&score)) {
    const int64_t p = clamp_len > 0 ? std::min(d, clamp_len) : d;
    std::vector<double> r(c.d_model);
    for (int64_t i = 0; i < c.d_model / 2; ++i) {
      const double f = std::pow(10000.0, -2.0 * i / c.d_model);
      r[i] = std::sin(p * f);
      r[c.d_model / 2 + i] = std::cos(p * f);
    }
    auto w = s->w_r->weight.to(torch::kFloat64);  // [H*D, C]
    for (int64_t e = 0; e < c.d_head; ++e)
      for (int64_t i = 0; i < c.d_model; ++i)
        key[e] += w[h * c.d_head + e][i].item<double>() * r[i];
  } else {
    auto* l = dynamic_cast<LearnedRelativeScore*>(&score);
    int64_t capped = d;
    if (clamp_len > 0) capped = std::min(capped, clamp_len);
    auto row = l->table[l->table_row(capped)].to(torch::kFloat64);  // [D]
    auto p = l->projection[h].to(torch::kFloat64);                  // [D, D]
    for (int64_t e = 0; e < c.d_head; ++e)
      for (int64_t i = 0; i < c.d_head; ++i)
        key[e] += row[i].item<double>() * p[i][e].item<double>();
  }
  return key;
}

void check_against_oracle(PosEncoding encoding, int64_t q_len, int64_t m_len, int64_t clamp_len) {
  torch::manual_seed(7);
  auto c = testing::tiny_model(encoding);
  auto base = make_position_score(c);
  auto* score = dynamic_cast<RelativeScore*>(base.get());
  ASSERT_NE(score, nullptr);
  const int64_t b = 2, h_n = c.n_head, d = c.d_head, k_len = q_len + m_len;
  auto q = torch::randn({b, h_n, q_len, d});
  auto k = torch::randn({b, h_n, k_len, d});
  PositionContext pos;
  pos.mem_len = m_len;
  pos.clamp_len = clamp_len;
  pos.sinusoids = relative_sinusoids(k_len, c.d_model, clamp_len);
  torch::NoGradGuard no_grad;
  auto fast = score->scores(q, k, pos);  // [B, H, Q, K]
  const double s = 1.0 / std::sqrt(double(d));
  for (int64_t h = 0; h < h_n; ++h) {
    auto u = score->u[h].to(torch::kFloat64) * s;
    auto v = score->v[h].to(torch::kFloat64) * s;
    for (int64_t i = 0; i < q_len; ++i)
      for (int64_t j = 0; j <= m_len + i; ++j) {
        auto key = oracle_distance_key(*score, c, h, m_len + i - j, clamp_len);
        for (int64_t bb = 0; bb < b; ++bb) {
          auto qi = q[bb][h][i].to(torch::kFloat64);
          double expect = ((qi + u) * k[bb][h][j].to(torch::kFloat64)).sum().item<double>();
          for (int64_t e = 0; e < d; ++e)
            expect += (qi[e].item<double>() + v[e].item<double>()) * key[e];
          EXPECT_NEAR(fast[bb][h][i][j].item<double>(), expect, 1e-4)
              << "Q=" << q_len << " M=" << m_len << " i=" << i << " j=" << j;
        }
      }
  }
}

class RelativeOracle
    : public ::testing::TestWithParam<std::tuple<PosEncoding, int64_t, int64_t, int64_t>> {};

TEST_P(RelativeOracle, FastPathEqualsNaiveDoubleLoop) {
  auto [encoding, q_len, m_len, clamp] = GetParam();
  check_against_oracle(encoding, q_len, m_len, clamp);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RelativeOracle,
                         ::testing::Combine(::testing::Values(PosEncoding::kRelative,
                                                              PosEncoding::kRelativeLearned),
                                            ::testing::Values(1, 3, 8),  // Q
                                            ::testing::Values(0, 2, 9),  // M
                                            ::testing::Values(0, 4)));   // clamp_len

}  // namespace
}  // namespace txl
