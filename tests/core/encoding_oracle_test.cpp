// Every registered encoding's score against a naive per-(i, j) loop written from its formula
// (config/encodings.h, model/encodings/*.h), plus hand-computed values: ALiBi slopes, T5
// buckets, RoPE shift invariance, YaRN's per-frequency factors. A new encoding without an
// oracle here fails EveryEncodingHasAnOracle.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "test_util.h"
#include "txl/model/encodings/alibi.h"
#include "txl/model/encodings/fire.h"
#include "txl/model/encodings/kerple.h"
#include "txl/model/encodings/learned_absolute.h"
#include "txl/model/encodings/relative.h"
#include "txl/model/encodings/rope.h"
#include "txl/model/encodings/t5.h"
#include "txl/model/positional.h"
#include "txl/model/transformer.h"
#include "txl/train/footprint_estimate.h"

namespace txl {
namespace {

double at(const torch::Tensor& t, std::initializer_list<int64_t> index) {
  torch::Tensor x = t;
  for (int64_t i : index) x = x[i];
  return x.item<double>();
}

double dot64(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) * b.to(torch::kFloat64)).sum().item<double>();
}

double softplus(double x) { return std::log1p(std::exp(x)); }

// One logit: head h, query i (position M + i), key j, vectors qi [D] (pre-scaled) and kj [D].
struct Case {
  PositionScoreImpl& score;
  const ModelConfig& c;
  int64_t h, i, j, mem_len, clamp_len;
  torch::Tensor qi, kj;
  int64_t distance() const {
    const int64_t n = std::max<int64_t>(mem_len + i - j, 0);
    return clamp_len > 0 ? std::min(n, clamp_len) : n;
  }
};
using Oracle = std::function<double(const Case&)>;

double sinusoid_relative(const Case& x) {
  auto& s = dynamic_cast<SinusoidRelativeScore&>(x.score);
  const int64_t C = x.c.d_model, D = x.c.d_head, p = x.distance();
  const double scale = 1.0 / std::sqrt(double(D));
  double out = 0;
  for (int64_t e = 0; e < D; ++e) {
    double key = 0;  // (W_r R[p])[h, e]
    for (int64_t f = 0; f < C / 2; ++f) {
      const double angle = p * std::pow(10000.0, -2.0 * f / C);
      key += at(s.w_r->weight, {x.h * D + e, f}) * std::sin(angle) +
             at(s.w_r->weight, {x.h * D + e, C / 2 + f}) * std::cos(angle);
    }
    const double q = at(x.qi, {e});
    out += (q + at(s.u, {x.h, e}) * scale) * at(x.kj, {e}) + (q + at(s.v, {x.h, e}) * scale) * key;
  }
  return out;
}

double learned_relative(const Case& x) {
  auto& s = dynamic_cast<LearnedRelativeScore&>(x.score);
  const int64_t D = x.c.d_head, row = s.table_row(x.distance());
  const double scale = 1.0 / std::sqrt(double(D));
  double out = 0;
  for (int64_t e = 0; e < D; ++e) {
    double key = 0;  // (T[row] P_h)[e]
    for (int64_t f = 0; f < D; ++f) key += at(s.table, {row, f}) * at(s.projection, {x.h, f, e});
    const double q = at(x.qi, {e});
    out += (q + at(s.u, {x.h, e}) * scale) * at(x.kj, {e}) + (q + at(s.v, {x.h, e}) * scale) * key;
  }
  return out;
}

double content(const Case& x) { return dot64(x.qi, x.kj); }

double rope(const Case& x) {
  const int64_t D = x.c.d_head;
  const double base = encoding_option(x.c, "rope_base");
  auto rotated = [&](const torch::Tensor& v, int64_t p) {
    std::vector<double> out(D);
    for (int64_t f = 0; f < D / 2; ++f) {
      const double a = p * std::pow(base, -2.0 * f / D);
      const double x1 = at(v, {f}), x2 = at(v, {f + D / 2});
      out[f] = x1 * std::cos(a) - x2 * std::sin(a);
      out[f + D / 2] = x2 * std::cos(a) + x1 * std::sin(a);
    }
    return out;
  };
  const auto q = rotated(x.qi, x.mem_len + x.i), k = rotated(x.kj, x.j);
  double out = 0;
  for (int64_t e = 0; e < D; ++e) out += q[e] * k[e];
  return out;
}

double alibi(const Case& x) {
  // H a power of two: m_h = 2^(-8 (h+1) / H).
  const double m = std::pow(2.0, -8.0 * (x.h + 1) / x.c.n_head);
  return dot64(x.qi, x.kj) - m * x.distance();
}

double t5(const Case& x) {
  auto& s = dynamic_cast<T5Score&>(x.score);
  const int64_t n = std::max<int64_t>(x.mem_len + x.i - x.j, 0);  // t5 ignores clamp_len
  return dot64(x.qi, x.kj) + std::sqrt(double(x.c.d_head)) *
                                 at(s.table, {t5_bucket(n, s.buckets, s.max_distance), x.h});
}

double kerple(const Case& x) {
  auto& s = dynamic_cast<KerpleScore&>(x.score);
  const double r1 = softplus(at(s.raw_r1, {x.h})), r2 = softplus(at(s.raw_r2, {x.h}));
  return dot64(x.qi, x.kj) - r1 * std::log(1 + r2 * x.distance());
}

double fire(const Case& x) {
  auto& s = dynamic_cast<FireScore&>(x.score);
  const double c = std::abs(at(s.c, {0})), L = std::abs(at(s.threshold, {0}));
  const int64_t n = std::max<int64_t>(x.mem_len + x.i - x.j, 0);  // fire ignores clamp_len
  const double p = double(x.mem_len + x.i);
  const double in = std::log(c * n + 1) / std::log(c * std::max(L, p) + 1);
  double out = at(s.fc2->bias, {x.h});
  for (int64_t u = 0; u < kFireHidden; ++u) {
    const double hidden = std::max(0.0, at(s.fc1->weight, {u, 0}) * in + at(s.fc1->bias, {u}));
    out += at(s.fc2->weight, {x.h, u}) * hidden;
  }
  return dot64(x.qi, x.kj) + out;
}

const std::map<PosEncoding, Oracle>& oracles() {
  static const std::map<PosEncoding, Oracle> table = {
      {PosEncoding::kRelative, sinusoid_relative},
      {PosEncoding::kAbsolute, content},
      {PosEncoding::kRelativeLearned, learned_relative},
      {PosEncoding::kNope, content},
      {PosEncoding::kRope, rope},
      {PosEncoding::kAlibi, alibi},
      {PosEncoding::kT5, t5},
      {PosEncoding::kKerple, kerple},
      {PosEncoding::kFire, fire},
      {PosEncoding::kLearnedAbsolute, content},
  };
  return table;
}

TEST(EncodingOracle, EveryEncodingHasAnOracle) {
  for (const auto& t : encoding_registry()) {
    EXPECT_TRUE(oracles().count(t.id)) << t.name << " has no oracle in this file";
  }
}

class ScoreOracle
    : public ::testing::TestWithParam<std::tuple<PosEncoding, int64_t, int64_t, int64_t>> {};

TEST_P(ScoreOracle, FastPathEqualsNaiveDoubleLoop) {
  const auto [encoding, q_len, m_len, clamp] = GetParam();
  const auto& traits = encoding_traits(encoding);
  if (m_len > 0 && !traits.takes_memory) GTEST_SKIP() << traits.name << " takes no memory";
  torch::manual_seed(11);
  auto c = testing::tiny_model(encoding);
  auto score = make_position_score(c);
  {
    // Move every learned parameter off its initial value so the oracle sees real weights.
    torch::NoGradGuard no_grad;
    for (auto& p : score->parameters()) p.add_(torch::randn_like(p) * 0.3);
  }
  const int64_t b = 2, H = c.n_head, D = c.d_head, k_len = q_len + m_len;
  auto q = torch::randn({b, H, q_len, D});
  auto k = torch::randn({b, H, k_len, D});
  PositionContext pos;
  pos.mem_len = m_len;
  pos.clamp_len = traits.uses_clamp_len ? clamp : 0;
  pos.sinusoids = relative_sinusoids(k_len, c.d_model, pos.clamp_len);
  const auto with_grad = score->scores(q, k, pos);  // [B, H, Q, K] (training path)
  torch::NoGradGuard no_grad;
  const auto fast = score->scores(q, k, pos);  // the evaluation path (FIRE: in chunks)
  EXPECT_LT(testing::max_abs_diff(with_grad, fast), 1e-5);
  const Oracle& oracle = oracles().at(encoding);
  for (int64_t bb = 0; bb < b; ++bb)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < q_len; ++i)
        for (int64_t j = 0; j <= m_len + i; ++j) {
          Case x{*score, c, h, i, j, m_len, pos.clamp_len, q[bb][h][i], k[bb][h][j]};
          EXPECT_NEAR(at(fast, {bb, h, i, j}), oracle(x), 1e-5)
              << traits.name << " Q=" << q_len << " M=" << m_len << " i=" << i << " j=" << j;
        }
}

INSTANTIATE_TEST_SUITE_P(Encodings, ScoreOracle,
                         ::testing::Combine(::testing::ValuesIn(testing::all_encodings()),
                                            ::testing::Values(1, 3, 8),  // Q
                                            ::testing::Values(0, 2, 9),  // M
                                            ::testing::Values(0, 4)),    // clamp_len
                         [](const auto& info) {
                           return std::string(encoding_traits(std::get<0>(info.param)).name) +
                                  "_Q" + std::to_string(std::get<1>(info.param)) + "_M" +
                                  std::to_string(std::get<2>(info.param)) + "_C" +
                                  std::to_string(std::get<3>(info.param));
                         });

// The traits' parameter formula (memory estimate, `txl encodings`) matches the built model.
TEST(EncodingTraits, ParameterCountMatchesTheModel) {
  for (const auto& t : encoding_registry()) {
    auto c = testing::tiny_model(t.id);
    TransformerLM model(c, 13);
    EXPECT_EQ(static_cast<double>(count_parameters(*model)), parameter_count(c, 13)) << t.name;
  }
}

TEST(Alibi, SlopesMatchThePaper) {
  auto expect = [](int64_t heads, const std::vector<double>& want) {
    const auto got = alibi_slopes(heads);
    ASSERT_EQ(got.size(), want.size()) << heads;
    for (size_t h = 0; h < want.size(); ++h)
      EXPECT_NEAR(got[h], want[h], 1e-12) << heads << " " << h;
  };
  expect(4, {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256});
  expect(6, {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 2, 1.0 / 8});
  expect(8, {1.0 / 2, 1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256});
  // 12 = 8 + 4: the 8-head slopes, then slopes 0, 2, 4, 6 of the 16-head set 2^(-k/2).
  const double r = std::sqrt(0.5);
  expect(12, {1.0 / 2, 1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256, r,
              r / 2, r / 4, r / 8});
}

TEST(T5, BucketOfEveryDistanceMatchesTheTable) {
  // First distance of buckets 16..31 (32 buckets, max distance 128); 0..15 are exact.
  const std::vector<int64_t> starts = {16, 19, 21, 24, 27, 31, 35, 40,
                                       46, 52, 59, 67, 77, 87, 99, 113};
  auto tensor = t5_buckets(torch::arange(0, 201, torch::kLong), 32, 128);
  for (int64_t n = 0; n <= 200; ++n) {
    int64_t want = n;
    if (n >= 16) {
      want = 15;
      for (size_t b = 0; b < starts.size(); ++b)
        if (n >= starts[b]) want = 16 + static_cast<int64_t>(b);
    }
    EXPECT_EQ(t5_bucket(n, 32, 128), want) << "n=" << n;
    EXPECT_EQ(tensor[n].item<int64_t>(), want) << "n=" << n;
  }
  EXPECT_EQ(t5_bucket(-3, 32, 128), 0);  // causal: the future is distance 0
}

TEST(Rope, ScoresOfShiftedPositionsAreEqual) {
  torch::manual_seed(4);
  const auto f = rope_frequencies(8, 10000.0, ExtrapolationAid::kNone, 1.0, 0);
  auto q = torch::randn({1, 1, 3, 8}), k = torch::randn({1, 1, 3, 8});
  auto s1 = torch::matmul(rotate(q, 5, f), rotate(k, 2, f).transpose(-1, -2));
  auto s2 = torch::matmul(rotate(q, 105, f), rotate(k, 102, f).transpose(-1, -2));
  EXPECT_LT(testing::max_abs_diff(s1, s2), 1e-4);
  // And a different offset gives different scores.
  auto s3 = torch::matmul(rotate(q, 5, f), rotate(k, 3, f).transpose(-1, -2));
  EXPECT_GT(testing::max_abs_diff(s1, s3), 1e-3);
}

TEST(Rope, AidFrequenciesComputedByHand) {
  // D = 64, base 10000, L = 128, s = 4. theta_j = 10000^(-j/32).
  const auto none = rope_frequencies(64, 10000.0, ExtrapolationAid::kNone, 4.0, 128);
  EXPECT_NEAR(none.theta[8], 0.1, 1e-15);
  EXPECT_DOUBLE_EQ(none.temperature, 1.0);
  // PI: every theta / 4.
  const auto pi = rope_frequencies(64, 10000.0, ExtrapolationAid::kPi, 4.0, 128);
  EXPECT_NEAR(pi.theta[8], 0.025, 1e-15);
  // NTK: base 10000 * 4^(64/62); theta_1 = base'^(-1/32).
  const auto ntk = rope_frequencies(64, 10000.0, ExtrapolationAid::kNtk, 4.0, 128);
  EXPECT_NEAR(ntk.theta[1], std::pow(10000.0 * std::pow(4.0, 64.0 / 62.0), -1.0 / 32), 1e-15);
  EXPECT_NEAR(ntk.theta[0], 1.0, 1e-15);  // the highest frequency is never scaled
  // YaRN: r_j = 128 theta_j / (2 pi), gamma = clamp((r - 1) / 31, 0, 1).
  const auto yarn = rope_frequencies(64, 10000.0, ExtrapolationAid::kYarn, 4.0, 128);
  // j = 0: r = 20.3718, gamma = 0.624898, theta' = 0.375102 / 4 + 0.624898 = 0.718673
  EXPECT_NEAR(yarn.theta[0], 0.718673, 1e-6);
  // j = 8: theta 0.1, r = 2.03718, gamma = 0.0334575, theta' = 0.966542 * 0.025 + 0.00334575
  EXPECT_NEAR(yarn.theta[8], 0.0275093, 1e-6);
  // j = 16: theta 0.01, r = 0.2037 < 1: gamma = 0, pure interpolation 0.01 / 4.
  EXPECT_NEAR(yarn.theta[16], 0.0025, 1e-12);
  // Temperature 0.1 ln 4 + 1.
  EXPECT_NEAR(yarn.temperature, 1.1386294, 1e-6);
}

}  // namespace
}  // namespace txl

namespace txl {
namespace {

TEST(LearnedAbsolute, InterpolationReadsBetweenRowsOfTheTrainedPositions) {
  torch::manual_seed(6);
  LearnedAbsoluteInput input(/*max_len=*/32, /*d_model=*/4, /*init_std=*/1.0);
  PositionContext pos;
  pos.aid = ExtrapolationAid::kInterpolate;
  pos.aid_scale = 2.0;
  torch::NoGradGuard no_grad;
  const auto rows = input.rows(8, pos);  // positions 0, 0.5, 1, ..., 3.5
  for (int64_t k = 0; k < 4; ++k) {
    EXPECT_LT(testing::max_abs_diff(rows[2 * k], input.table[k]), 1e-6);
    EXPECT_LT(testing::max_abs_diff(rows[2 * k + 1], (input.table[k] + input.table[k + 1]) / 2),
              1e-6);
  }
  // In the model, the derived factor stretches the window over the trained rows (here 8),
  // not over the whole table: a window of 16 then differs from reading rows 0..15.
  auto c = testing::tiny_model(PosEncoding::kLearnedAbsolute);
  TransformerLM model(c, 13);
  model->eval();
  auto tokens = torch::randint(13, {1, 16}, torch::kLong);
  ForwardOptions plain, stretched;
  stretched.aid = ExtrapolationAid::kInterpolate;
  stretched.aid_length = 16;
  stretched.train_len = 8;
  EXPECT_GT(testing::max_abs_diff(model->forward(tokens, {}, plain).scores,
                                  model->forward(tokens, {}, stretched).scores),
            1e-4);
}

}  // namespace
}  // namespace txl
