// The study's statistics against values computed by hand: Student t quantiles, a t interval
// over a small table of per-seed NLLs, and the grouping, pairing and fallbacks of
// compute_study_stats on made-up cells.
#include "txl/study/study_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "txl/study/statistics.h"

namespace txl {
namespace {

TEST(StudentT, QuantilesMatchTheTableFor2To10Seeds) {
  // t(0.975, df) for df = n - 1 = 1..9, as printed in every statistics table.
  const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262};
  for (int df = 1; df <= 9; ++df) {
    EXPECT_NEAR(student_t_quantile(0.975, df), table[df - 1], 5e-4) << "df " << df;
  }
  EXPECT_NEAR(student_t_quantile(0.975, 1000), 1.962, 1e-3);  // tends to the normal 1.960
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604, 5e-4);
  EXPECT_NEAR(student_t_quantile(0.5, 3), 0.0, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.025, 2), -4.303, 5e-4);
  // df = 1 is the Cauchy distribution: P(T <= 1) = 3/4 exactly.
  EXPECT_NEAR(student_t_cdf(1.0, 1), 0.75, 1e-12);
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
}

TEST(SeedInterval, ThreeSeedsByHand) {
  // mean 1.523333, sd 0.0251661, half width 4.302653 * sd / sqrt(3) = 0.0625161.
  const SeedInterval s = seed_interval({1.50, 1.52, 1.55});
  ASSERT_TRUE(s.valid);
  EXPECT_EQ(s.n, 3);
  EXPECT_NEAR(s.mean, 1.5233333333, 1e-9);
  EXPECT_NEAR(s.sd, 0.0251661148, 1e-9);
  EXPECT_NEAR(s.lo, 1.4608172385, 1e-8);
  EXPECT_NEAR(s.hi, 1.5858494281, 1e-8);
  EXPECT_TRUE(s.excludes_zero());
}

TEST(SeedInterval, FourDifferencesStraddlingZero) {
  // mean 0.05, sd 0.0509902, t(0.975, 3) = 3.182446: [-0.031137, 0.131137].
  const SeedInterval s = seed_interval({0.10, -0.02, 0.05, 0.07});
  EXPECT_NEAR(s.lo, -0.0311367791, 1e-8);
  EXPECT_NEAR(s.hi, 0.1311367791, 1e-8);
  EXPECT_FALSE(s.excludes_zero());
}

TEST(SeedInterval, OneValueHasNoInterval) {
  const SeedInterval s = seed_interval({2.0});
  EXPECT_FALSE(s.valid);
  EXPECT_DOUBLE_EQ(s.lo, 2.0);
  EXPECT_FALSE(s.excludes_zero());
  EXPECT_FALSE(seed_interval({}).valid);
}

// A result of `windows` windows of 10 tokens each whose NLL per token alternates around `m`.
EvalResult made_up(int64_t length, double m, int windows = 4) {
  EvalResult r;
  r.length = length;
  for (int w = 0; w < windows; ++w) {
    const double per_token = m + (w % 2 ? 0.01 : -0.01);
    r.window_nll.push_back(per_token * 10);
    r.window_tokens.push_back(10);
    r.nll += per_token * 10;
    r.tokens += 10;
  }
  return r;
}

StudySpec two_group_spec(const std::vector<int64_t>& seeds) {
  nlohmann::json grid = {{"model.pos_encoding", {"relative", "rope"}}, {"train.seed", seeds}};
  nlohmann::json base = {{"data", {{"dir", "unused"}}},
                         {"train", {{"tgt_len", 8}, {"mem_len", 0}}}};
  return study_from_json({{"base", base}, {"grid", grid}, {"eval", {{"lengths", {8, 16}}}}},
                         "test.json");
}

CellResults cell(const std::string& group, int64_t seed, double at8, double at16) {
  CellResults c;
  c.name = group + "-seed" + std::to_string(seed);
  c.group = group;
  c.seed = seed;
  c.results = {{made_up(8, at8), made_up(16, at16)}};
  c.skipped = {{"", ""}};
  return c;
}

TEST(StudyStats, GroupsPairsBySeedAndRatiosToTheTrainingLength) {
  const StudySpec spec = two_group_spec({1, 2, 3});
  const std::vector<CellResults> cells = {
      cell("relative", 1, 1.50, 1.40), cell("relative", 2, 1.52, 1.41),
      cell("relative", 3, 1.55, 1.45), cell("rope", 1, 1.60, 2.00),
      cell("rope", 2, 1.52, 2.10),     cell("rope", 3, 1.60, 1.90)};
  const StudyStats s = compute_study_stats(spec, cells, "");
  EXPECT_EQ(s.baseline, "relative");
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_TRUE(s.missing_cells.empty());
  const LengthStats& base8 = s.groups[0].rows[0][0];
  EXPECT_EQ(base8.seeds, 3);
  EXPECT_EQ(base8.ppl.basis, "seeds");
  EXPECT_NEAR(base8.ppl.value, std::exp(1.5233333333), 1e-8);
  EXPECT_NEAR(base8.ppl.lo, std::exp(1.4608172385), 1e-7);
  EXPECT_NEAR(base8.ppl.hi, std::exp(1.5858494281), 1e-7);
  EXPECT_FALSE(base8.has_vs_baseline);
  // rope - relative per seed at L=8: 0.10, 0.00, 0.05 -> mean 0.05, sd 0.05, half 0.124207.
  const LengthStats& rope8 = s.groups[1].rows[0][0];
  ASSERT_TRUE(rope8.has_vs_baseline);
  EXPECT_EQ(rope8.pairs, 3);
  EXPECT_NEAR(rope8.nll_diff.value, 0.05, 1e-12);
  EXPECT_NEAR(rope8.nll_diff.hi - rope8.nll_diff.value, 4.302652729911275 * 0.05 / std::sqrt(3.0),
              1e-9);
  EXPECT_FALSE(rope8.significant);
  // At L=16: 0.60, 0.69, 0.45 -> clearly worse, significant.
  const LengthStats& rope16 = s.groups[1].rows[0][1];
  EXPECT_TRUE(rope16.significant);
  EXPECT_GT(rope16.ppl_ratio.lo, 1.0);
  // Extrapolation ratio of relative at 16 vs 8 (tgt_len): per seed -0.10, -0.11, -0.10.
  const LengthStats& base16 = s.groups[0].rows[0][1];
  ASSERT_TRUE(base16.has_vs_train);
  EXPECT_NEAR(base16.train_ratio.value, std::exp(-0.31 / 3), 1e-9);
  EXPECT_LT(base16.train_ratio.hi, 1.0);
  EXPECT_NEAR(base8.train_ratio.value, 1.0, 1e-12);
}

TEST(StudyStats, OneSeedFallsBackToWindowsAndIsNeverSignificant) {
  const StudySpec spec = two_group_spec({1});
  const StudyStats s =
      compute_study_stats(spec, {cell("relative", 1, 1.5, 1.4), cell("rope", 1, 2.5, 3.0)}, "");
  const LengthStats& rope8 = s.groups[1].rows[0][0];
  EXPECT_EQ(rope8.ppl.basis, "windows");
  EXPECT_TRUE(rope8.ppl.has_interval);
  EXPECT_EQ(rope8.ppl_ratio.basis, "windows");
  EXPECT_GT(rope8.ppl_ratio.lo, 1.0);  // the windows say worse ...
  EXPECT_FALSE(rope8.significant);     // ... but one seed cannot say it is real
}

TEST(StudyStats, MissingCellsAndOtherBaselines) {
  const StudySpec spec = two_group_spec({1, 2});
  const StudyStats s =
      compute_study_stats(spec, {cell("relative", 1, 1.5, 1.4), cell("rope", 2, 1.6, 1.7)}, "rope");
  EXPECT_EQ(s.baseline, "rope");
  EXPECT_EQ(s.missing_cells, (std::vector<std::string>{"relative-seed2", "rope-seed1"}));
  // No seed in common: no paired difference.
  EXPECT_FALSE(s.groups[0].rows[0][0].has_vs_baseline);
  EXPECT_EQ(s.groups[0].seeds, (std::vector<int64_t>{1}));
}

// With another grid key, each group is compared with the baseline encoding at the same value
// of that key: only the encoding differs in a comparison.
TEST(StudyStats, ExtraGridKeysPairWithTheBaselineAtTheSameValues) {
  nlohmann::json base = {{"data", {{"dir", "unused"}}},
                         {"train", {{"tgt_len", 8}, {"mem_len", 0}}}};
  const StudySpec spec = study_from_json({{"base", base},
                                          {"grid",
                                           {{"model.pos_encoding", {"relative", "rope"}},
                                            {"train.tgt_len", {8, 16}},
                                            {"train.seed", {1, 2}}}},
                                          {"eval", {{"lengths", {8, 16}}}}},
                                         "test.json");
  EXPECT_EQ(baseline_group(spec, "rope-tgt_len16", "relative"), "relative-tgt_len16");
  std::vector<CellResults> cells;
  for (const auto& [group, at8] :
       std::vector<std::pair<std::string, double>>{{"relative-tgt_len8", 1.0},
                                                   {"relative-tgt_len16", 2.0},
                                                   {"rope-tgt_len8", 1.1},
                                                   {"rope-tgt_len16", 2.3}}) {
    cells.push_back(cell(group, 1, at8, at8));
    cells.push_back(cell(group, 2, at8 + 0.02, at8));
  }
  const StudyStats s = compute_study_stats(spec, cells, "");
  ASSERT_EQ(s.groups.size(), 4u);
  EXPECT_EQ(s.groups[3].name, "rope-tgt_len16");
  EXPECT_EQ(s.groups[3].baseline_group, "relative-tgt_len16");
  EXPECT_NEAR(s.groups[3].rows[0][0].nll_diff.value, 0.3, 1e-12);  // 2.3 - 2.0, not 2.3 - 1.0
  EXPECT_NEAR(s.groups[2].rows[0][0].nll_diff.value, 0.1, 1e-12);
  EXPECT_FALSE(s.groups[1].rows[0][0].has_vs_baseline);  // a baseline group itself
  // Training length per group: tgt_len 16's ratio is taken at L = 16.
  EXPECT_EQ(s.groups[1].train_length, 16);
  EXPECT_NEAR(s.groups[1].rows[0][1].train_ratio.value, 1.0, 1e-12);
}

}  // namespace
}  // namespace txl
