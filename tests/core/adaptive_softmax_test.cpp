// Adaptive input and adaptive softmax (model/adaptive_softmax.h) against the formula:
//  - per-token log-probabilities equal a float64 oracle that reads the parameters by name and
//    writes the factorisation out (head logits, the cluster's head log-probability, the tail's
//    log-softmax), and sum to 1 over the vocabulary; tied and untied weights and projections,
//    div_val 1 and 2, three clusters;
//  - the input side equals each token's table row through its cluster's projection;
//  - the model's want_scores log-probabilities give its nll; evaluation in row blocks equals one
//    pass; every cluster with targets gets gradients.
#include "txl/model/adaptive_softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"
#include "txl/model/transformer.h"
#include "txl/platform/onednn.h"

namespace txl {
namespace {

using testing::max_abs_diff;

constexpr int64_t kVocab = 13;
constexpr int64_t kWidth = 8;
const std::vector<int64_t> kBounds = {0, 4, 9, kVocab};  // head, two tails

struct Case {
  const char* name;
  int64_t div_val;
  bool tie_weights;
  std::vector<bool> tie_projs;
};

AdaptiveConfig adaptive_config(const Case& c) {
  AdaptiveConfig a;
  a.cutoffs = {kBounds[1], kBounds[2]};
  a.div_val = c.div_val;
  a.tie_projs = c.tie_projs;
  return a;
}

// Both modules in float64 with every parameter random (biases too, so that they count).
struct Modules {
  AdaptiveInput input{nullptr};
  AdaptiveSoftmax softmax{nullptr};
  torch::Tensor bias;  // [V]
};

Modules make_modules(const Case& c) {
  torch::manual_seed(11);
  const AdaptiveConfig a = adaptive_config(c);
  Modules m{AdaptiveInput(a, kWidth, kVocab, 0.5),
            AdaptiveSoftmax(a, kWidth, kVocab, c.tie_weights, 0.5),
            torch::randn({kVocab}, torch::kDouble)};
  m.input->to(torch::kDouble);
  m.softmax->to(torch::kDouble);
  torch::NoGradGuard no_grad;
  for (auto& p : m.input->parameters()) p.normal_(0.0, 0.5);
  for (auto& p : m.softmax->parameters()) p.normal_(0.0, 0.5);
  return m;
}

torch::Tensor named(const torch::nn::Module& module, const std::string& name) {
  const auto params = module.named_parameters();
  EXPECT_TRUE(params.contains(name)) << "no parameter " << name;
  return params.contains(name) ? params[name] : torch::Tensor();
}

// Cluster i's output table [n_i, d_i] and projection [C, d_i] (undefined: none), as the
// parameter names and the tying rules of adaptive_softmax.h say.
std::pair<torch::Tensor, torch::Tensor> oracle_cluster(const Modules& m, const Case& c, int64_t i) {
  const torch::nn::Module& owner =
      c.tie_weights ? static_cast<const torch::nn::Module&>(*m.input) : *m.softmax;
  torch::Tensor table, proj;
  if (c.div_val == 1) {
    table = named(owner, "clusters.0.weight").narrow(0, kBounds[i], kBounds[i + 1] - kBounds[i]);
  } else {
    table = named(owner, "clusters." + std::to_string(i) + ".weight");
    const std::string key = "projs." + std::to_string(i);
    proj = c.tie_projs[i] ? named(*m.input, key) : named(*m.softmax, key);
  }
  return {table, proj};
}

double dot_row(const torch::Tensor& x, const torch::Tensor& row) {
  double s = 0;
  for (int64_t k = 0; k < x.size(0); ++k) s += x[k].item<double>() * row[k].item<double>();
  return s;
}

double log_sum_exp(const std::vector<double>& v) {
  double top = v[0];
  for (double x : v) top = std::max(top, x);
  double s = 0;
  for (double x : v) s += std::exp(x - top);
  return top + std::log(s);
}

// log p(w) for every word of one row h [C], written from the formula with loops.
std::vector<double> oracle_log_probs(const Modules& m, const Case& c, const torch::Tensor& h) {
  const int64_t n = static_cast<int64_t>(kBounds.size()) - 2;
  const auto cw = named(*m.softmax, "cluster_weight"), cb = named(*m.softmax, "cluster_bias");
  auto projected = [&](int64_t i) {
    const auto proj = oracle_cluster(m, c, i).second;
    return proj.defined() ? torch::matmul(h, proj) : h;  // [d_i]
  };
  const auto head_table = oracle_cluster(m, c, 0).first;
  const auto x0 = projected(0);
  std::vector<double> head;
  for (int64_t w = 0; w < kBounds[1]; ++w)
    head.push_back(dot_row(x0, head_table[w]) + m.bias[w].item<double>());
  // Tail cluster i's logit is the head's i-th last: cluster_weight row n - i.
  for (int64_t r = 0; r < n; ++r) head.push_back(dot_row(x0, cw[r]) + cb[r].item<double>());
  const double head_norm = log_sum_exp(head);
  std::vector<double> out;
  for (int64_t w = 0; w < kBounds[1]; ++w) out.push_back(head[w] - head_norm);
  for (int64_t i = 1; i <= n; ++i) {
    const double cluster = head[kBounds[1] + n - i] - head_norm;
    const auto table = oracle_cluster(m, c, i).first;
    const auto xi = projected(i);
    std::vector<double> tail;
    for (int64_t w = kBounds[i]; w < kBounds[i + 1]; ++w)
      tail.push_back(dot_row(xi, table[w - kBounds[i]]) + m.bias[w].item<double>());
    const double tail_norm = log_sum_exp(tail);
    for (double t : tail) out.push_back(cluster + t - tail_norm);
  }
  return out;
}

class AdaptiveOracle : public ::testing::TestWithParam<Case> {};

TEST_P(AdaptiveOracle, LogProbabilitiesEqualTheFactorisation) {
  const Case c = GetParam();
  const Modules m = make_modules(c);
  const AdaptiveWeights w = m.softmax->weights(*m.input, m.bias);
  const auto h = torch::randn({6, kWidth}, torch::kDouble);               // [N, C]
  const auto targets = torch::tensor({0, 3, 4, 8, 9, 12}, torch::kLong);  // every cluster
  const auto log_probs = adaptive_log_probs(h, w);                        // [N, V]
  const auto nll = adaptive_nll(h, targets, w);                           // [N]
  ASSERT_EQ(log_probs.sizes(), (std::vector<int64_t>{6, kVocab}));
  ASSERT_EQ(nll.scalar_type(), torch::kDouble);
  for (int64_t r = 0; r < 6; ++r) {
    const auto expected = oracle_log_probs(m, c, h[r]);
    double total = 0;
    for (int64_t v = 0; v < kVocab; ++v) {
      EXPECT_NEAR(log_probs[r][v].item<double>(), expected[v], 1e-12)
          << "row " << r << " word " << v;
      total += std::exp(expected[v]);
    }
    EXPECT_NEAR(total, 1.0, 1e-12) << "row " << r;
    EXPECT_NEAR(log_probs[r].exp().sum().item<double>(), 1.0, 1e-12) << "row " << r;
    const int64_t t = targets[r].item<int64_t>();
    EXPECT_NEAR(nll[r].item<double>(), -expected[t], 1e-12) << "row " << r << " target " << t;
  }
}

// Evaluation's path (float32, no gradients): the head over all rows, each tail over its rows,
// in blocks of rows as small as one and as large as all, equals the float64 factorisation.
TEST_P(AdaptiveOracle, EvaluationsBlockedNllEqualsTheFactorisation) {
  const Case c = GetParam();
  Modules m = make_modules(c);
  const auto h = torch::randn({12, kWidth}, torch::kDouble);  // [N, C]
  const auto targets = torch::tensor({0, 3, 4, 8, 9, 12, 12, 5, 1, 10, 6, 2}, torch::kLong);
  std::vector<double> expected;
  for (int64_t r = 0; r < 12; ++r)
    expected.push_back(-oracle_log_probs(m, c, h[r])[targets[r].item<int64_t>()]);
  m.input->to(torch::kFloat);
  m.softmax->to(torch::kFloat);
  const AdaptiveWeights w = m.softmax->weights(*m.input, m.bias.to(torch::kFloat));
  torch::NoGradGuard no_grad;
  for (const int64_t budget : {int64_t{1}, int64_t{3 * 5 * 4}, int64_t{1} << 20}) {
    const auto nll = adaptive_nll_without_grad(h.to(torch::kFloat), targets, w, budget);  // [N]
    ASSERT_EQ(nll.scalar_type(), torch::kFloat);
    for (int64_t r = 0; r < 12; ++r)
      EXPECT_NEAR(nll[r].item<double>(), expected[static_cast<size_t>(r)], 1e-5)
          << "budget " << budget << " row " << r;
  }
}

TEST_P(AdaptiveOracle, InputIsTheTableRowThroughItsProjection) {
  const Case c = GetParam();
  Modules m = make_modules(c);
  const auto tokens = torch::tensor({{0, 5, 12}, {9, 3, 4}}, torch::kLong);  // [2, 3]
  const auto got = m.input->forward(tokens);                                 // [2, 3, C]
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{2, 3, kWidth}));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t q = 0; q < 3; ++q) {
      const int64_t id = tokens[b][q].item<int64_t>();
      int64_t i = 0;
      while (id >= kBounds[i + 1]) ++i;
      torch::Tensor row;
      if (c.div_val == 1) {
        row = named(*m.input, "clusters.0.weight")[id];
      } else {
        const auto e =
            named(*m.input, "clusters." + std::to_string(i) + ".weight")[id - kBounds[i]];
        row = torch::matmul(named(*m.input, "projs." + std::to_string(i)), e);  // [C]
      }
      EXPECT_LT(max_abs_diff(got[b][q], row), 1e-12) << "token " << id;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, AdaptiveOracle,
    ::testing::Values(Case{"div1_tied", 1, true, {false, true, true}},
                      Case{"div1_untied", 1, false, {false, true, true}},
                      Case{"div2_tied_mixed_projs", 2, true, {false, true, false}},
                      Case{"div2_untied_untied_projs", 2, false, {false, false, false}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(AdaptiveLayout, ParameterNamesAndShapes) {
  const Case c{"div2", 2, false, {false, true, false}};
  const Modules m = make_modules(c);
  std::vector<std::string> names;
  for (const auto& p : m.softmax->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"cluster_weight", "cluster_bias", "clusters.0.weight",
                                             "clusters.1.weight", "clusters.2.weight", "projs.0",
                                             "projs.2"}));
  EXPECT_EQ(named(*m.input, "clusters.2.weight").sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(named(*m.input, "projs.1").sizes(), (std::vector<int64_t>{kWidth, 4}));
}

// The tiny model with adaptive input and softmax over kVocab words.
TransformerLM adaptive_model(int64_t div_val, bool tie_weights) {
  torch::manual_seed(5);
  auto cfg = testing::tiny_model(PosEncoding::kRelative);
  cfg.tie_weights = tie_weights;
  cfg.adaptive = adaptive_config({"", div_val, tie_weights, {false, true, true}});
  TransformerLM model(cfg, kVocab);
  torch::NoGradGuard no_grad;
  model->output_bias.normal_(0.0, 1.0);
  return model;
}

TEST(AdaptiveModel, LogitsAreLogProbabilitiesThatGiveTheNll) {
  for (const int64_t div_val : {1, 2}) {
    auto model = adaptive_model(div_val, true);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto tokens = torch::randint(kVocab, {2, 7}, torch::kLong);
    ForwardOptions opts;
    opts.targets = torch::randint(kVocab, {2, 7}, torch::kLong);
    opts.want_scores = true;
    const auto out = model->forward(tokens, {}, opts);
    ASSERT_EQ(out.scores.sizes(), (std::vector<int64_t>{2, 7, kVocab}));
    EXPECT_LT(max_abs_diff(out.scores.exp().sum(-1), torch::ones({2, 7})), 1e-5);
    const auto picked = out.scores.gather(2, opts.targets.unsqueeze(2)).squeeze(2);  // [2, 7]
    EXPECT_LT(max_abs_diff(out.nll, -picked), 1e-5) << "div_val " << div_val;
    opts.want_scores = false;
    EXPECT_LT(max_abs_diff(model->forward(tokens, {}, opts).nll, out.nll), 1e-6);
  }
}

TEST(AdaptiveModel, RowBlocksEqualOnePass) {
  auto model = adaptive_model(2, false);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto tokens = torch::randint(kVocab, {2, 9}, torch::kLong);
  ForwardOptions whole;
  whole.targets = torch::randint(kVocab, {2, 9}, torch::kLong);
  whole.query_block = -1;
  const auto expected = model->forward(tokens, {}, whole).nll;
  for (const int64_t block : {1, 4, 18}) {
    ForwardOptions blocked = whole;
    blocked.query_block = block;
    EXPECT_LT(max_abs_diff(model->forward(tokens, {}, blocked).nll, expected), 1e-6)
        << "block " << block;
  }
}

TEST(AdaptiveModel, EveryClusterWithTargetsGetsGradients) {
  for (const bool tie : {true, false}) {
    auto model = adaptive_model(2, tie);
    model->train();
    const auto tokens = torch::tensor({{0, 5, 10, 2}, {12, 4, 9, 1}}, torch::kLong);
    ForwardOptions opts;
    opts.targets = torch::tensor({{1, 6, 11, 3}, {10, 0, 7, 12}}, torch::kLong);
    model->forward(tokens, {}, opts).nll.sum().backward();
    for (const auto& p : model->named_parameters()) {
      if (p.key().rfind("adaptive", 0) != 0 && p.key() != "output_bias") continue;
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
    }
    // No target in the last tail: its untied table gets a gradient of zeros, defined, so that
    // every rank of a data-parallel run all-reduces the same list.
    model->zero_grad();
    opts.targets = torch::tensor({{1, 6, 2, 3}, {5, 0, 7, 4}}, torch::kLong);
    model->forward(tokens, {}, opts).nll.sum().backward();
    for (const auto& p : model->named_parameters())
      EXPECT_TRUE(p.value().grad().defined()) << p.key() << " tie " << tie;
    if (!tie) {
      const auto g = model->named_parameters()["adaptive_softmax.clusters.2.weight"].grad();
      EXPECT_EQ(g.abs().sum().item<double>(), 0.0);
    }
  }
}

// The tails' products take as many rows as a step has targets in them, a new count every
// step: they must not JIT a oneDNN kernel per count (each kept: a WikiText-2 run's resident
// memory grew by 0.64 GB in 100 steps that way).
TEST(AdaptiveModel, RowCountsThatChangeEveryStepMakeNoNewOneDnnKernels) {
  if (!onednn_for_layers())
    GTEST_SKIP() << "the layers do not use oneDNN here: " << onednn_matmul_status();
  auto model = adaptive_model(2, false);
  model->train();
  // [3, 5]: a shape no other test here uses, so the first step makes its kernels here.
  const auto tokens = torch::arange(15, torch::kLong).remainder(kVocab).view({3, 5});
  const auto step = [&](int64_t shift) {
    ForwardOptions opts;
    opts.targets =
        (torch::arange(15, torch::kLong) * (shift + 1) + shift).remainder(kVocab).view({3, 5});
    model->forward(tokens, {}, opts).nll.sum().backward();
  };
  const int64_t before = onednn_matmul_kernels_made();
  step(0);
  const int64_t first = onednn_matmul_kernels_made();
  EXPECT_GT(first, before) << "the layers' products made no kernel: the check below means nothing";
  // Other counts of targets in each tail, the same input tokens.
  for (const int64_t shift : {1, 2, 3, 4}) step(shift);
  EXPECT_EQ(onednn_matmul_kernels_made(), first);
}

}  // namespace
}  // namespace txl
