// The fused attention (model/fused_attention.h) against
//  - a naive loop written from the formula: s[i, j] = query_i . key_j + shifted[i, j+Q-1-i]
//    + bias[i, j] over j <= M + i, softmax, times the values (every encoding's terms);
//  - the operator path (materialize, masked_fill_, softmax, batched_matmul): the same
//    gradients for the queries, keys, values and every parameter of the encoding;
//  - the whole model with TXL_FUSED_ATTENTION=0: the same loss and gradients in training with
//    memory, and the same logits in evaluation in query blocks.
#include "txl/model/fused_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "test_util.h"
#include "txl/model/positional.h"
#include "txl/model/transformer.h"
#include "txl/platform/runtime.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using testing::max_abs_diff;

struct Setup {
  std::shared_ptr<PositionScoreImpl> score;
  torch::Tensor q, k, v;  // [B, H, Q, D], [B, H, K, D] x 2
  PositionContext pos;
};

Setup make_setup(PosEncoding encoding, int64_t q_len, int64_t m_len) {
  torch::manual_seed(5);
  const auto c = testing::tiny_model(encoding);
  Setup s;
  s.score = make_position_score(c);
  {
    torch::NoGradGuard no_grad;  // off the initial values, so every term matters
    for (auto& p : s.score->parameters()) p.add_(torch::randn_like(p) * 0.3);
  }
  const int64_t b = 2, k_len = q_len + m_len;
  s.q = torch::randn({b, c.n_head, q_len, c.d_head}).requires_grad_();
  s.k = torch::randn({b, c.n_head, k_len, c.d_head}).requires_grad_();
  s.v = torch::randn({b, c.n_head, k_len, c.d_head}).requires_grad_();
  s.pos.mem_len = m_len;
  s.pos.train_len = k_len;
  s.pos.sinusoids = relative_sinusoids(k_len, c.d_model, 0);
  return s;
}

// softmax over j <= M + i of the terms' logits, times v, in double from the formula.
torch::Tensor naive_attention(const ScoreTerms& t, const torch::Tensor& v_in, int64_t m_len) {
  const auto query = t.query.detach().to(torch::kFloat64);
  const auto key = t.key.detach().to(torch::kFloat64);
  const auto v = v_in.detach().to(torch::kFloat64);
  const int64_t B = query.size(0), H = query.size(1), Q = query.size(2), D = query.size(3);
  auto out = torch::zeros({B, H, Q, D}, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i) {
        std::vector<double> logit;
        for (int64_t j = 0; j <= m_len + i; ++j) {
          double s = (query[b][h][i] * key[b][h][j]).sum().item<double>();
          if (t.shifted.defined()) s += t.shifted[b][h][i][j + Q - 1 - i].item<double>();
          if (t.bias.defined()) s += t.bias[h][i][j].item<double>();
          logit.push_back(s);
        }
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (double s : logit) top = std::max(top, s);
        for (double s : logit) sum += std::exp(s - top);
        for (size_t j = 0; j < logit.size(); ++j)
          out[b][h][i] += v[b][h][static_cast<int64_t>(j)] * (std::exp(logit[j] - top) / sum);
      }
  return out;
}

// What attention computed before the fused pass: every [B, H, Q, K] step an operator.
torch::Tensor operator_attention(const ScoreTerms& t, const torch::Tensor& v, int64_t m_len) {
  auto s = materialize(t);
  s.masked_fill_(causal_mask(t.query.size(2), m_len), -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(s, -1), v);
}

class Fused : public ::testing::TestWithParam<std::tuple<PosEncoding, int64_t, int64_t>> {
 protected:
  void SetUp() override {
    const auto [encoding, q_len, m_len] = GetParam();
    if (m_len > 0 && !encoding_traits(encoding).takes_memory)
      GTEST_SKIP() << encoding_traits(encoding).name << " takes no memory";
  }
};

// The row blocks a head's pass is cut into (TXL_FUSED_ROW_BLOCK): the default (one block at
// these lengths), single rows, and blocks of 3 (the last one short when Q = 4 or 7). Each
// block skips the keys past its last row's, so these check the skipped triangle too.
const std::vector<const char*> kRowBlocks = {nullptr, "1", "3"};

TEST_P(Fused, EqualsTheFormula) {
  const auto [encoding, q_len, m_len] = GetParam();
  for (const char* rows : kRowBlocks) {
    SCOPED_TRACE(std::string("row block ") + (rows ? rows : "default"));
    testing::ScopedEnv env("TXL_FUSED_ROW_BLOCK", rows);
    auto s = make_setup(encoding, q_len, m_len);
    const auto terms = s.score->terms(s.q, s.k, s.pos);
    const auto expected = naive_attention(terms, s.v, m_len);
    EXPECT_LT(max_abs_diff(fused_attention(terms, s.v, m_len), expected), 1e-5);
    torch::NoGradGuard no_grad;  // the evaluation pass keeps no probabilities
    const auto eval_terms = s.score->terms(s.q, s.k, s.pos);
    EXPECT_LT(max_abs_diff(fused_attention(eval_terms, s.v, m_len), expected), 1e-5);
  }
}

TEST_P(Fused, GradientsEqualTheOperatorPath) {
  const auto [encoding, q_len, m_len] = GetParam();
  for (const char* rows : kRowBlocks) {
    SCOPED_TRACE(std::string("row block ") + (rows ? rows : "default"));
    testing::ScopedEnv env("TXL_FUSED_ROW_BLOCK", rows);
    auto s = make_setup(encoding, q_len, m_len);
    std::vector<torch::Tensor> inputs = {s.q, s.k, s.v};
    for (const auto& p : s.score->parameters()) inputs.push_back(p);
    const auto weights = torch::randn({2, s.q.size(1), q_len, s.q.size(3)});
    const auto grads_of = [&](bool fused) {
      const auto terms = s.score->terms(s.q, s.k, s.pos);
      const auto out = fused ? fused_attention(terms, s.v, m_len)
                             : operator_attention(terms, s.v, m_len);  // [B, H, Q, D]
      return torch::autograd::grad({(out * weights).sum()}, inputs, {}, false, false, true);
    };
    const auto expected = grads_of(false);
    const auto got = grads_of(true);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (!expected[i].defined()) {
        EXPECT_FALSE(got[i].defined() && got[i].abs().max().item<double>() > 0) << "input " << i;
        continue;
      }
      ASSERT_TRUE(got[i].defined()) << "input " << i;
      const double scale = std::max(1.0, expected[i].abs().max().item<double>());
      EXPECT_LT(max_abs_diff(got[i], expected[i]) / scale, 1e-5) << "input " << i;
    }
  }
}

TEST(FusedRowBlock, AnythingButOnePositiveIntegerIsRefusedByName) {
  auto s = make_setup(PosEncoding::kRelative, 4, 2);
  for (const char* bad : {"", "0", "-3", "abc", "2,3", "4x"}) {
    SCOPED_TRACE(std::string("TXL_FUSED_ROW_BLOCK='") + bad + "'");
    testing::ScopedEnv env("TXL_FUSED_ROW_BLOCK", bad);
    testing::expect_input_error([&] { fused_attention(s.score->terms(s.q, s.k, s.pos), s.v, 2); },
                                {"TXL_FUSED_ROW_BLOCK=\"" + std::string(bad) + "\" is not valid"});
  }
  testing::ScopedEnv huge("TXL_FUSED_ROW_BLOCK", "1000000");  // more than Q: one block
  const auto terms = s.score->terms(s.q, s.k, s.pos);
  EXPECT_LT(max_abs_diff(fused_attention(terms, s.v, 2), naive_attention(terms, s.v, 2)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Encodings, Fused,
                         ::testing::Combine(::testing::ValuesIn(testing::all_encodings()),
                                            ::testing::Values(1, 4, 7),  // Q
                                            ::testing::Values(0, 5)),    // M
                         [](const auto& info) {
                           return std::string(encoding_traits(std::get<0>(info.param)).name) +
                                  "_Q" + std::to_string(std::get<1>(info.param)) + "_M" +
                                  std::to_string(std::get<2>(info.param));
                         });

// TXL_FUSED_ATTENTION=0 for the life of one object.
struct OperatorPath : testing::ScopedEnv {
  OperatorPath() : ScopedEnv("TXL_FUSED_ATTENTION", "0") {}
};

class FusedModel : public ::testing::TestWithParam<PosEncoding> {};

TEST_P(FusedModel, TrainingStepWithMemoryEqualsTheOperatorPath) {
  const auto encoding = GetParam();
  const bool memory = encoding_traits(encoding).takes_memory;
  torch::manual_seed(3);
  TransformerLM model(testing::tiny_model(encoding), 11);
  model->train();
  const auto first = torch::randint(11, {2, 6}, torch::kLong);
  const auto tokens = torch::randint(11, {2, 7}, torch::kLong);
  const auto targets = torch::randint(11, {2, 7}, torch::kLong);
  const auto step = [&] {
    model->zero_grad();
    ForwardOptions keep;
    keep.keep_memory = memory ? 6 : 0;
    Memory mem;
    {
      torch::NoGradGuard no_grad;
      if (memory) mem = model->forward(first, {}, keep).memory;
    }
    ForwardOptions opts;
    opts.targets = targets;
    const auto loss = model->forward(tokens, mem, opts).nll.mean();
    loss.backward();
    std::vector<torch::Tensor> grads = {loss.detach().clone()};
    for (const auto& p : model->parameters())
      grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return grads;
  };
  ASSERT_TRUE(fused_attention_applies(torch::zeros({1})));
  const auto fused = step();
  std::vector<torch::Tensor> expected;
  {
    OperatorPath off;
    ASSERT_FALSE(fused_attention_applies(torch::zeros({1})));
    expected = step();
  }
  for (size_t i = 0; i < fused.size(); ++i) {
    const double scale = std::max(1.0, expected[i].abs().max().item<double>());
    EXPECT_LT(max_abs_diff(fused[i], expected[i]) / scale, 1e-5)
        << (i == 0 ? std::string("loss") : "parameter " + std::to_string(i - 1));
  }
}

TEST_P(FusedModel, EvaluationInQueryBlocksEqualsTheOperatorPath) {
  torch::manual_seed(3);
  TransformerLM model(testing::tiny_model(GetParam()), 11);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto tokens = torch::randint(11, {2, 13}, torch::kLong);
  ForwardOptions opts;
  opts.query_block = 4;
  const auto fused = model->forward(tokens, {}, opts).scores;
  OperatorPath off;
  opts.query_block = -1;
  EXPECT_LT(max_abs_diff(fused, model->forward(tokens, {}, opts).scores), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Encodings, FusedModel, ::testing::ValuesIn(testing::all_encodings()),
                         testing::EncodingName());

// Operands as LibTorch may hand them over: a single query row whose row stride is 1 (LibTorch
// calls it contiguous all the same), keys and values read through a transposed layout, and a
// broadcast output gradient (stride 0). The per-block products take rows in place, so each
// of these must be read right or copied first.
TEST(FusedAttention, OddStridesAreReadRight) {
  auto s = make_setup(PosEncoding::kRelative, 1, 3);
  const auto q_len = s.q.size(2);
  ScoreTerms terms = s.score->terms(s.q, s.k, s.pos);
  terms.query = terms.query.detach().contiguous().as_strided(
      terms.query.sizes(), {terms.query.size(1) * terms.query.size(3), terms.query.size(3), 1, 1});
  ASSERT_EQ(terms.query.stride(2), 1);
  ASSERT_EQ(q_len, 1);
  terms.key = terms.key.detach().transpose(2, 3).contiguous().transpose(2, 3);  // columns apart
  const auto v = s.v.detach().clone().requires_grad_();
  const auto expected = naive_attention(terms, v, 3);
  const auto out = fused_attention(terms, v, 3);
  EXPECT_LT(max_abs_diff(out, expected), 1e-5);
  // A broadcast gradient: d(out.sum()) / dv = the probabilities' column sums times ones.
  const auto grad = torch::autograd::grad({out.sum()}, {v})[0];
  const auto ones = torch::ones({1, 1, 1, 1}).expand_as(out);
  const auto operator_grad =
      torch::autograd::grad({(operator_attention(terms, v, 3) * ones).sum()}, {v})[0];
  EXPECT_LT(max_abs_diff(grad, operator_grad), 1e-5);
}

TEST(FusedAttention, OnlyFloat32OnTheCpuOutsideAutocast) {
  EXPECT_TRUE(fused_attention_applies(torch::zeros({2}, torch::kFloat32)));
  EXPECT_FALSE(fused_attention_applies(torch::zeros({2}, torch::kBFloat16)));
  EXPECT_FALSE(fused_attention_applies(torch::zeros({2}, torch::kFloat64)));
  {
    AutocastGuard autocast(Precision::kBf16, torch::kCPU);
    EXPECT_FALSE(fused_attention_applies(torch::zeros({2}, torch::kFloat32)));
  }
  auto q = torch::zeros({1, 1, 2, 4}), k = torch::zeros({1, 1, 3, 4});
  EXPECT_THROW(fused_attention({q, k, {}, {}}, k, /*mem_len=*/2), c10::Error);  // K != Q + M
}

}  // namespace
}  // namespace txl
