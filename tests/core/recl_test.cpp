// RECL as a pure function over loss tables, against answers computed by hand from the
// Transformer-XL paper's definition (recl_search.h), then the loss table of a real model: each
// l(c, t) is the loss of that target in its own window, and a model that sees no context
// has RECL = c_0.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "txl/model/transformer.h"
#include "txl/probe/context_losses.h"
#include "txl/probe/recl_search.h"
#include "txl/util/error.h"

namespace txl {
namespace {

TEST(Recl, TopTargetsTakeTheCeilingOfRTimesNLargestTiesByIndex) {
  EXPECT_EQ(top_count(0.1, 500), 50);
  EXPECT_EQ(top_count(0.5, 5), 3);
  EXPECT_EQ(top_count(1e-6, 5), 1);
  EXPECT_EQ(top_count(1.0, 5), 5);
  const std::vector<double> b = {1, 5, 3, 5, 2};
  EXPECT_EQ(top_targets(b, 0.4), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(top_targets(b, 0.5), (std::vector<size_t>{1, 3, 2}));
}

// Two models, contexts 10, 20, 30, two targets (losses [model][context][target]).
ContextLossTable hand_table() {
  ContextLossTable t;
  t.models = {"A", "B"};
  t.contexts = {10, 20, 30};
  t.targets = {100, 200};
  t.losses = {{{2.0, 1.0}, {1.5, 1.0}, {1.5, 1.0}},   // A gains from 10 to 20 only
              {{2.2, 1.2}, {2.2, 1.2}, {1.0, 0.9}}};  // B gains from 20 to 30 only
  return t;
}

TEST(Recl, HandComputedTableFollowsTheBaselineTopRAndTheStoppingRule) {
  const auto r = compute_recl(hand_table(), {{0.5, 1.0}, 0.01});
  ASSERT_EQ(r.curves.size(), 2u);
  // r = 0.5: T(10) = {target 0} (b = 2.0). A: f(10,10) = 2.0, f(10,20) = min(2.0, 1.5) = 1.5,
  // g = 1 - e^-0.5 >= 0.01: on to 20; T(20) = {target 0} (b = 1.5), f = 1.5 both: g = 0,
  // RECL_A = 20. B: f(10,20) = min(2.0, 2.2) = 2.0, g = 0: RECL_B = 10, although B would gain
  // from 20 to 30 (the search stops at the first step below the threshold).
  const auto& half = r.curves[0];
  EXPECT_EQ(half.recl, (std::vector<int64_t>{20, 10}));
  EXPECT_EQ(half.at_grid_end, (std::vector<bool>{false, false}));
  ASSERT_EQ(half.steps.size(), 2u);
  EXPECT_NEAR(half.steps[0].relative_gain[0], 1 - std::exp(-0.5), 1e-12);
  EXPECT_NEAR(half.steps[0].gain[0], std::exp(2.0) - std::exp(1.5), 1e-12);
  EXPECT_NEAR(half.steps[0].relative_gain[1], 0.0, 1e-12);
  EXPECT_NEAR(half.steps[1].relative_gain[1], 1 - std::exp(-0.5), 1e-12);
  // r = 1: T = both targets. A: f(10,10) = 1.5, f(10,20) = (1.5 + 1.0) / 2 = 1.25.
  const auto& all = r.curves[1];
  EXPECT_NEAR(all.steps[0].relative_gain[0], 1 - std::exp(-0.25), 1e-12);
  EXPECT_EQ(all.recl, (std::vector<int64_t>{20, 10}));
}

TEST(Recl, ThresholdDecidesAndTheGridEndIsALowerBound) {
  // A threshold above A's first gain (0.39) stops A at once.
  EXPECT_EQ(compute_recl(hand_table(), {{0.5}, 0.5}).curves[0].recl[0], 10);
  ContextLossTable t;
  t.models = {"only"};
  t.contexts = {4, 8, 12};
  t.targets = {50};
  t.losses = {{{3.0}, {2.0}, {1.0}}};
  const auto curve = compute_recl(t, {{1.0}, 0.01}).curves[0];
  EXPECT_EQ(curve.recl[0], 12);
  EXPECT_TRUE(curve.at_grid_end[0]);
}

// Issue 42: a model whose predictions flatten gains by the paper's rule while its own loss
// gets worse. Two models, contexts 1, 2, 3, 100 targets: "flat" loses 1 nat on the 50 targets
// that were hard (5 -> 4) and gains 2 on the 50 easy ones (1 -> 3) from c = 1 to 2, then
// gains 0.5 on every target from 2 to 3; "steady" keeps its losses.
TEST(Recl, GainWhileTheModelsOwnLossRisesIsMarkedAsFlattening) {
  ContextLossTable t;
  t.models = {"flat", "steady"};
  t.contexts = {1, 2, 3};
  for (int64_t j = 0; j < 100; ++j) t.targets.push_back(10 + j);
  std::vector<double> hard_easy, flattened, later;
  for (int j = 0; j < 100; ++j) {
    hard_easy.push_back(j < 50 ? 5.0 : 1.0);
    flattened.push_back(j < 50 ? 4.0 : 3.0);
    later.push_back(j < 50 ? 3.5 : 2.5);
  }
  t.losses = {{hard_easy, flattened, later}, {hard_easy, hard_easy, hard_easy}};
  const auto curve = compute_recl(t, {{1.0}, 0.01}).curves[0];
  // b(1, t) = the losses at c = 1 (both models equal); f_flat(1, 2) = mean min(b, l) = 2.5
  // against 3: the paper's rule counts the step. Its own mean loss rises from 3 to 3.5: paired
  // rises of -1 and +2, mean 0.5 with a standard error 0.151, lower bound 0.204 > 0: marked.
  const auto& first = curve.steps[0];
  EXPECT_NEAR(first.relative_gain[0], 1 - std::exp(-0.5), 1e-12);
  EXPECT_NEAR(first.own_from[0], 3.0, 1e-12);
  EXPECT_NEAR(first.own_to[0], 3.5, 1e-12);
  EXPECT_NEAR(first.own_rise_lo[0], 0.5 - 1.96 * std::sqrt(225.0 / 99.0 / 100.0), 1e-9);
  EXPECT_TRUE(first.flattening[0]);
  EXPECT_FALSE(first.flattening[1]) << "no gain, no mark";
  // From 2 to 3 the flat model's own loss falls 0.5 everywhere: a real gain, not marked.
  EXPECT_FALSE(curve.steps[1].flattening[0]);
  // The paper's RECL counts both steps; without the flattening step the search stops at once.
  EXPECT_EQ(curve.recl, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(curve.recl_without_flattening, (std::vector<int64_t>{1, 1}));
}

TEST(Recl, GroupsNeedTheSameContextsAndTargets) {
  ContextLossTable a = hand_table(), b = hand_table();
  a.models = {"A"};
  a.losses.resize(1);
  b.models = {"B"};
  b.losses.erase(b.losses.begin());
  EXPECT_EQ(group_loss_tables({a, b}).models, (std::vector<std::string>{"A", "B"}));
  b.targets = {100, 201};
  EXPECT_THROW(group_loss_tables({a, b}), InputError);
  ContextLossTable broken = hand_table();
  broken.losses[1].pop_back();
  EXPECT_THROW(check_loss_table(broken), std::invalid_argument);
  EXPECT_EQ(context_grid(16, 16, 64), (std::vector<int64_t>{16, 32, 48, 64}));
  EXPECT_EQ(context_grid(5, 10, 30), (std::vector<int64_t>{5, 15, 25}));
}

TEST(Recl, EachLossIsItsTargetScoredWithExactlyCTokensBeforeIt) {
  constexpr int64_t kVocab = 13;
  torch::manual_seed(5);
  TransformerLM model(testing::tiny_model(PosEncoding::kRelative), kVocab);
  const auto ids = testing::random_ids(200, kVocab);
  ContextLossRequest req;
  req.contexts = {3, 7, 11};
  req.targets = 6;
  req.seed = 9;
  const auto table = measure_context_losses(model, ids, req, "rel");
  ASSERT_EQ(table.targets.size(), 6u);
  model->eval();
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < table.contexts.size(); ++k) {
    for (size_t j = 0; j < table.targets.size(); ++j) {
      const int64_t c = table.contexts[k], t = table.targets[j];
      ASSERT_GE(t, 11);
      const auto w = torch::tensor(std::vector<int64_t>(ids.begin() + (t - c), ids.begin() + t + 1))
                         .unsqueeze(0);  // [1, c + 1]
      ForwardOptions f;
      f.targets = w.narrow(1, 1, c);
      const auto nll = model->forward(w.narrow(1, 0, c), Memory{}, f).nll;  // [1, c]
      EXPECT_NEAR(table.losses[0][k][j], nll[0][c - 1].item<double>(), 1e-5) << c << " " << t;
    }
  }
  // Same seed, same targets: two machines score the same instances.
  EXPECT_EQ(measure_context_losses(model, ids, req, "again").targets, table.targets);
}

TEST(Recl, AModelThatSeesNoContextHasReclAtTheFirstContext) {
  constexpr int64_t kVocab = 13;
  torch::manual_seed(5);
  TransformerLM blind(testing::tiny_model(PosEncoding::kNope), kVocab);
  {
    torch::NoGradGuard no_grad;
    for (auto& block : *blind->blocks) block->as<Block>()->attn->out->weight.zero_();
  }
  const auto ids = testing::random_ids(300, kVocab);
  ContextLossRequest req;
  req.contexts = context_grid(4, 4, 32);
  req.targets = 40;
  auto table = measure_context_losses(blind, ids, req, "blind");
  const auto r = compute_recl(table, {});
  for (const auto& curve : r.curves) EXPECT_EQ(curve.recl[0], 4) << curve.ratio;
}

}  // namespace
}  // namespace txl
