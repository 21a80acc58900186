// Properties the whole model must have, for every encoding:
//  - causal: changing token t changes no output before t (with and without memory);
//  - memory: segment A then B with mem_len >= |A| equals [A ; B] in one pass, on B (in
//    evaluation through the kept key/value projections of the memory rows, which are
//    checked to be read, kept only in evaluation, and dropped with any other memory);
//  - query blocks: evaluation in blocks of queries equals attention over all queries at once;
//  - score_from: scoring only the last positions equals the tail of a full pass;
//  - bf16 autocast: loss and gradient within bf16 rounding of float32.
// Causality and memory equivalence run again with model.adaptive (with_adaptive: adaptive
// input and softmax; `logits` are then log-probabilities).
#include <gtest/gtest.h>

#include "test_util.h"
#include "txl/model/transformer.h"
#include "txl/platform/runtime.h"

namespace txl {
namespace {

using testing::max_abs_diff;
using testing::tiny_model;

constexpr int64_t kVocab = 11;

TransformerLM make_model(PosEncoding encoding, bool adaptive = false) {
  torch::manual_seed(3);
  const ModelConfig config = tiny_model(encoding);
  TransformerLM model(adaptive ? testing::with_adaptive(config) : config, kVocab);
  model->eval();
  return model;
}

// The memory a random first segment of `len` tokens (batch 2) leaves, where the model's
// encoding takes memory; empty otherwise.
Memory first_segment_memory(TransformerLM& model, int64_t len) {
  if (!encoding_traits(model->config().pos_encoding).takes_memory) return {};
  torch::NoGradGuard no_grad;
  ForwardOptions keep;
  keep.keep_memory = len;
  return model->forward(torch::randint(kVocab, {2, len}, torch::kLong), {}, keep).memory;
}

torch::Tensor logits_of(TransformerLM& model, const torch::Tensor& tokens, const Memory& mem = {}) {
  ForwardOptions opts;
  return model->forward(tokens, mem, opts).scores;  // [B, Q, V]
}

// (encoding, model.adaptive)
class Causality : public ::testing::TestWithParam<std::tuple<PosEncoding, bool>> {};

TEST_P(Causality, ChangingTokenTLeavesEarlierOutputsUnchanged) {
  auto model = make_model(std::get<0>(GetParam()), std::get<1>(GetParam()));
  torch::NoGradGuard no_grad;
  const int64_t len = 10;
  auto tokens = torch::randint(kVocab, {2, len}, torch::kLong);
  auto base = logits_of(model, tokens);
  for (int64_t t : {int64_t{0}, int64_t{4}, len - 1}) {
    auto changed = tokens.clone();
    changed.index_put_({torch::indexing::Slice(), t},
                       (tokens.index({torch::indexing::Slice(), t}) + 1) % kVocab);
    auto out = logits_of(model, changed);
    if (t > 0)
      EXPECT_LT(max_abs_diff(out.narrow(1, 0, t), base.narrow(1, 0, t)), 1e-6) << "t=" << t;
    EXPECT_GT(max_abs_diff(out.narrow(1, t, len - t), base.narrow(1, t, len - t)), 1e-4)
        << "changing token " << t << " must change its own output";
  }
}

TEST_P(Causality, HoldsWithMemory) {
  const PosEncoding encoding = std::get<0>(GetParam());
  if (!encoding_traits(encoding).takes_memory) {
    GTEST_SKIP() << encoding_traits(encoding).name << " encoding has no memory";
  }
  auto model = make_model(encoding, std::get<1>(GetParam()));
  torch::NoGradGuard no_grad;
  auto first = torch::randint(kVocab, {2, 5}, torch::kLong);
  ForwardOptions keep;
  keep.keep_memory = 5;
  auto mem = model->forward(first, {}, keep).memory;
  ASSERT_EQ(mem.length(), 5);
  auto tokens = torch::randint(kVocab, {2, 7}, torch::kLong);
  auto base = logits_of(model, tokens, mem);
  const int64_t t = 3;
  auto changed = tokens.clone();
  changed.index_put_({torch::indexing::Slice(), t},
                     (tokens.index({torch::indexing::Slice(), t}) + 1) % kVocab);
  auto out = logits_of(model, changed, mem);
  EXPECT_LT(max_abs_diff(out.narrow(1, 0, t), base.narrow(1, 0, t)), 1e-6);
  EXPECT_GT(max_abs_diff(out.narrow(1, t, 7 - t), base.narrow(1, t, 7 - t)), 1e-4);
  // And the memory itself carries information: a different past changes the present.
  auto other_mem = model->forward(torch::randint(kVocab, {2, 5}, torch::kLong), {}, keep).memory;
  EXPECT_GT(max_abs_diff(logits_of(model, tokens, other_mem), base), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Encodings, Causality,
                         ::testing::Combine(::testing::ValuesIn(testing::all_encodings()),
                                            ::testing::Values(false)),
                         testing::EncodingAdaptiveName());
INSTANTIATE_TEST_SUITE_P(Adaptive, Causality,
                         ::testing::Combine(::testing::ValuesIn(testing::all_encodings()),
                                            ::testing::Values(true)),
                         testing::EncodingAdaptiveName());

// (encoding, pre_norm, model.adaptive)
class MemoryEquivalence : public ::testing::TestWithParam<std::tuple<PosEncoding, bool, bool>> {};

// The tiny model of the test's encoding, norm placement and output, seeded, in eval mode.
TransformerLM memory_test_model(const std::tuple<PosEncoding, bool, bool>& param, uint64_t seed) {
  torch::manual_seed(seed);
  auto cfg = tiny_model(std::get<0>(param));
  cfg.pre_norm = std::get<1>(param);
  if (std::get<2>(param)) cfg = testing::with_adaptive(cfg);
  TransformerLM model(cfg, kVocab);
  model->eval();
  return model;
}

TEST_P(MemoryEquivalence, SegmentsEqualOnePass) {
  auto model = memory_test_model(GetParam(), 5);
  torch::NoGradGuard no_grad;
  const int64_t len_a = 6, len_b = 5;
  auto tokens = torch::randint(kVocab, {3, len_a + len_b}, torch::kLong);
  auto full = logits_of(model, tokens);  // [B, A+B, V]

  for (int64_t mem_len : {len_a, len_a + 4}) {
    ForwardOptions keep;
    keep.keep_memory = mem_len;
    auto first = model->forward(tokens.narrow(1, 0, len_a), {}, keep);
    auto second = model->forward(tokens.narrow(1, len_a, len_b), first.memory, keep);
    EXPECT_LT(max_abs_diff(second.scores, full.narrow(1, len_a, len_b)), 1e-5)
        << "mem_len=" << mem_len;
    EXPECT_LT(max_abs_diff(first.scores, full.narrow(1, 0, len_a)), 1e-5);
  }
  // Three segments with memory exactly covering the past: still equal to one pass.
  ForwardOptions keep;
  keep.keep_memory = len_a + len_b;
  auto s1 = model->forward(tokens.narrow(1, 0, 4), {}, keep);
  auto s2 = model->forward(tokens.narrow(1, 4, 4), s1.memory, keep);
  auto s3 = model->forward(tokens.narrow(1, 8, 3), s2.memory, keep);
  EXPECT_LT(max_abs_diff(s3.scores, full.narrow(1, 8, 3)), 1e-5);
}

std::string memory_case_name(
    const ::testing::TestParamInfo<std::tuple<PosEncoding, bool, bool>>& info) {
  return std::string(encoding_traits(std::get<0>(info.param)).name) +
         (std::get<1>(info.param) ? "_pre_norm" : "_post_norm") +
         (std::get<2>(info.param) ? "_adaptive" : "");
}

INSTANTIATE_TEST_SUITE_P(Encodings, MemoryEquivalence,
                         ::testing::Combine(::testing::ValuesIn(testing::memory_encodings()),
                                            ::testing::Bool(), ::testing::Values(false)),
                         memory_case_name);
INSTANTIATE_TEST_SUITE_P(Adaptive, MemoryEquivalence,
                         ::testing::Combine(::testing::ValuesIn(testing::memory_encodings()),
                                            ::testing::Values(false), ::testing::Values(true)),
                         memory_case_name);

// Evaluation keeps each layer's key/value projection of the memory rows ([B, M, 2*H*D])
// and the next segment reads it; training, or evaluation with gradients, keeps none.
TEST_P(MemoryEquivalence, KeptProjectionsAreReadAndOnlyInEvaluation) {
  auto model = memory_test_model(GetParam(), 6);
  const auto& cfg = model->config();
  auto tokens = torch::randint(kVocab, {2, 9}, torch::kLong);
  ForwardOptions keep;
  keep.keep_memory = 7;  // the second segment's memory mixes old rows and new ones
  Memory memory;
  {
    torch::NoGradGuard no_grad;
    memory = model->forward(tokens.narrow(1, 0, 4), {}, keep).memory;
    memory = model->forward(tokens.narrow(1, 4, 3), memory, keep).memory;
  }
  const auto hd = cfg.n_head * cfg.d_head;
  for (size_t l = 0; l < memory.layers.size(); ++l) {
    ASSERT_TRUE(memory.projection(l).defined()) << "layer " << l;
    EXPECT_EQ(memory.projection(l).sizes(), (std::vector<int64_t>{2, 7, 2 * hd}));
  }
  torch::NoGradGuard no_grad;
  const auto next = tokens.narrow(1, 7, 2);
  const auto kept = logits_of(model, next, memory);
  // The same rows without their projections: projected again, the same logits.
  const auto recomputed = logits_of(model, next, Memory{memory.layers, {}, {}});
  EXPECT_LT(max_abs_diff(kept, recomputed), 1e-5);
  // A projection changed behind the memory's back changes the logits: it is read.
  Memory tampered = memory;
  tampered.projected[0] = torch::zeros_like(memory.projected[0]);
  EXPECT_GT(max_abs_diff(logits_of(model, next, tampered), kept), 1e-3);
  // Rows edited the only way the code edits them (new tensors) drop the projection.
  Memory narrowed = memory;
  for (auto& layer : narrowed.layers) layer = layer.narrow(0, 1, 1);
  for (size_t l = 0; l < narrowed.layers.size(); ++l)
    EXPECT_FALSE(narrowed.projection(l).defined());
  EXPECT_LT(max_abs_diff(logits_of(model, next.narrow(0, 1, 1), narrowed), kept.narrow(0, 1, 1)),
            1e-5);
  // The last streams as evaluation takes them (last_streams) keep their projections, which
  // are still read (tampered: the logits change) and give the same logits.
  const Memory last = last_streams(memory, 1);
  for (size_t l = 0; l < last.layers.size(); ++l) {
    ASSERT_TRUE(last.projection(l).defined()) << "layer " << l;
    EXPECT_TRUE(torch::equal(last.projection(l), memory.projection(l).narrow(0, 1, 1)));
  }
  EXPECT_LT(max_abs_diff(logits_of(model, next.narrow(0, 1, 1), last), kept.narrow(0, 1, 1)), 1e-5);
  Memory last_tampered = last;
  last_tampered.projected[0] = torch::zeros_like(last.projected[0]);
  EXPECT_GT(
      max_abs_diff(logits_of(model, next.narrow(0, 1, 1), last_tampered), kept.narrow(0, 1, 1)),
      1e-3);
  EXPECT_EQ(last_streams(memory, 5).projection(0).data_ptr(), memory.projection(0).data_ptr());
  {
    torch::AutoGradMode with_grad(true);
    EXPECT_FALSE(model->forward(next, memory, keep).memory.projection(0).defined());
    model->train();
    EXPECT_FALSE(model->forward(next, memory, keep).memory.projection(0).defined());
    model->eval();
  }
}

TEST(MemoryUpdate, KeepsTheLastPositionsDetached) {
  auto model = make_model(PosEncoding::kRelative);
  auto tokens = torch::randint(kVocab, {2, 4}, torch::kLong);
  ForwardOptions keep;
  keep.keep_memory = 3;
  auto out = model->forward(tokens, {}, keep);
  ASSERT_EQ(out.memory.layers.size(), 2u);
  EXPECT_EQ(out.memory.length(), 3);
  EXPECT_FALSE(out.memory.layers[0].requires_grad());
  keep.keep_memory = 0;
  EXPECT_TRUE(model->forward(tokens, {}, keep).memory.empty());
}

TEST(Loss, NllEqualsCrossEntropyOfLogits) {
  auto model = make_model(PosEncoding::kRelative);
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(kVocab, {2, 6}, torch::kLong);
  auto targets = torch::randint(kVocab, {2, 6}, torch::kLong);
  ForwardOptions opts;
  opts.targets = targets;
  opts.want_scores = true;
  auto out = model->forward(tokens, {}, opts);
  auto logp = torch::log_softmax(out.scores.to(torch::kFloat64), -1);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 6; ++t)
      EXPECT_NEAR(out.nll[b][t].item<double>(),
                  -logp[b][t][targets[b][t].item<int64_t>()].item<double>(), 1e-5);
}

// Without logits asked for, the output bias is added in the loss (token_nll), not in the
// product; the loss and every parameter's gradient (the bias's too) equal those of the
// logits with the bias in them. The bias is made non-zero, so that it counts.
TEST(Loss, OutputBiasInTheLossGivesTheLossAndGradientsOfTheLogits) {
  auto model = make_model(PosEncoding::kRelative);
  {
    torch::NoGradGuard no_grad;
    model->output_bias.copy_(torch::randn({kVocab}) * 2.0);
  }
  auto tokens = torch::randint(kVocab, {2, 6}, torch::kLong);
  auto targets = torch::randint(kVocab, {2, 6}, torch::kLong);
  auto weights = torch::rand({2, 6});
  const auto named = model->named_parameters();
  const auto run = [&](bool want_scores) {
    ForwardOptions opts;
    opts.targets = targets;
    opts.want_scores = want_scores;
    auto out = model->forward(tokens, {}, opts);
    EXPECT_EQ(out.scores.defined(), want_scores);
    auto grads = torch::autograd::grad({(out.nll * weights).sum()}, named.values());
    grads.push_back(out.nll.detach());
    return grads;
  };
  const auto folded = run(false);
  const auto with_logits = run(true);
  ASSERT_EQ(folded.size(), with_logits.size());
  const auto keys = named.keys();
  for (size_t i = 0; i < folded.size(); ++i) {
    const auto what = i < keys.size() ? keys[i] : std::string("nll");
    EXPECT_LT(max_abs_diff(folded[i], with_logits[i]), 1e-5) << what;
    if (what == "output_bias") EXPECT_GT(folded[i].abs().sum().item<double>(), 0.0);
  }
}

// Long evaluation windows attend in blocks of queries (position_score.h); the numbers must be
// those of one pass over all queries, for every encoding, with and without memory, for block
// sizes that divide the window and ones that do not. Aids too (rope's dynamic scale is per
// pass, not per block).
class QueryBlocks : public ::testing::TestWithParam<PosEncoding> {};

TEST_P(QueryBlocks, EqualOnePassOverAllQueries) {
  auto model = make_model(GetParam());
  torch::NoGradGuard no_grad;
  const Memory mem = first_segment_memory(model, 6);
  auto tokens = torch::randint(kVocab, {2, 13}, torch::kLong);
  ForwardOptions whole;
  whole.query_block = -1;
  whole.aid_length = 13;
  whole.train_len = 8;
  if (GetParam() == PosEncoding::kRope) whole.aid = ExtrapolationAid::kDynamicYarn;
  const auto expected = model->forward(tokens, mem, whole).scores;
  for (const int64_t block : {1, 4, 5, 13}) {
    ForwardOptions blocked = whole;
    blocked.query_block = block;
    const auto got = model->forward(tokens, mem, blocked).scores;
    EXPECT_LT(max_abs_diff(got, expected), 1e-5) << "block " << block;
  }
  // Training (gradients on) never blocks: the same graph as always.
  EXPECT_EQ(attention_query_block(2, 4, 13, 19, /*requested=*/4, /*grad=*/true), 13);
}

// With targets, the output layer and the NLL also run in blocks of rows; the per-token NLL
// must be that of one pass, with memory where the encoding takes it.
TEST_P(QueryBlocks, OutputBlocksGiveTheSameNll) {
  auto model = make_model(GetParam());
  torch::NoGradGuard no_grad;
  const Memory mem = first_segment_memory(model, 5);
  auto tokens = torch::randint(kVocab, {2, 11}, torch::kLong);
  ForwardOptions whole;
  whole.targets = torch::randint(kVocab, {2, 11}, torch::kLong);
  whole.query_block = -1;
  const auto expected = model->forward(tokens, mem, whole);
  ASSERT_FALSE(expected.scores.defined());
  for (const int64_t block : {1, 3, 7, 22}) {
    ForwardOptions blocked = whole;
    blocked.query_block = block;
    EXPECT_EQ(output_row_block(22, kVocab, blocked), std::min<int64_t>(block, 22));
    const auto got = model->forward(tokens, mem, blocked).nll;
    ASSERT_EQ(got.sizes(), expected.nll.sizes());
    EXPECT_LT(max_abs_diff(got, expected.nll), 1e-5) << "block " << block;
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, QueryBlocks, ::testing::ValuesIn(testing::all_encodings()),
                         testing::EncodingName());

// Scoring only the tail (score_from: the last layer and the output skip the context
// positions) gives the full pass's last rows, for every encoding, with and without memory,
// with and without query blocks, pre- and post-norm.
class ScoreFrom : public ::testing::TestWithParam<PosEncoding> {};

TEST_P(ScoreFrom, EqualsTheTailOfAFullPass) {
  for (const bool pre_norm : {false, true}) {
    torch::manual_seed(3);
    auto config = tiny_model(GetParam());
    config.pre_norm = pre_norm;
    TransformerLM model(config, kVocab);
    model->eval();
    torch::NoGradGuard no_grad;
    const Memory mem = first_segment_memory(model, 4);
    const int64_t len = 13;
    auto tokens = torch::randint(kVocab, {2, len}, torch::kLong);
    ForwardOptions whole;
    whole.targets = torch::randint(kVocab, {2, len}, torch::kLong);
    whole.want_scores = true;
    whole.aid_length = len;
    whole.train_len = 8;
    whole.keep_memory = 4;
    if (GetParam() == PosEncoding::kRope) whole.aid = ExtrapolationAid::kDynamicYarn;
    const auto expected = model->forward(tokens, mem, whole);
    for (const int64_t from : {1, 6, 12}) {
      for (const int64_t block : {0, 5}) {
        ForwardOptions tail = whole;
        tail.score_from = from;
        tail.query_block = block;
        const auto got = model->forward(tokens, mem, tail);
        ASSERT_EQ(got.nll.sizes(), (std::vector<int64_t>{2, len - from}));
        const auto where = ::testing::Message() << "pre_norm " << pre_norm << " score_from " << from
                                                << " block " << block;
        EXPECT_LT(max_abs_diff(got.nll, expected.nll.narrow(1, from, len - from)), 1e-5) << where;
        EXPECT_LT(max_abs_diff(got.scores, expected.scores.narrow(1, from, len - from)), 1e-5)
            << where;
        // The memory is the layers' inputs, which the tail pass computes in full.
        for (size_t l = 0; l < got.memory.layers.size(); ++l)
          EXPECT_LT(max_abs_diff(got.memory.layers[l], expected.memory.layers[l]), 1e-6) << where;
      }
    }
    ForwardOptions bad = whole;
    bad.score_from = len;
    EXPECT_THROW(model->forward(tokens, mem, bad), c10::Error);
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, ScoreFrom, ::testing::ValuesIn(testing::all_encodings()),
                         testing::EncodingName());

// Under bf16 autocast (matrix products, attention probabilities and logits in bf16; loss,
// norms and the residual stream in float32) the loss and the gradient stay those of float32
// up to bf16 rounding, for every encoding, with memory where it takes one.
class Bf16Autocast : public ::testing::TestWithParam<PosEncoding> {};

TEST_P(Bf16Autocast, LossAndGradientCloseToFloat32) {
  auto model = make_model(GetParam());
  const Memory mem = first_segment_memory(model, 6);
  auto tokens = torch::randint(kVocab, {2, 12}, torch::kLong);
  ForwardOptions opts;
  opts.targets = torch::randint(kVocab, {2, 12}, torch::kLong);
  auto loss_and_grad = [&](Precision precision) {
    model->zero_grad();
    torch::Tensor nll;
    {
      AutocastGuard autocast(precision, torch::kCPU);
      nll = model->forward(tokens, mem, opts).nll;  // [B, Q] float32
    }
    nll.mean().backward();
    std::vector<torch::Tensor> grads;
    for (const auto& p : model->parameters())
      if (p.grad().defined()) grads.push_back(p.grad().reshape({-1}).clone());
    return std::make_pair(nll.detach(), torch::cat(grads));
  };
  const auto [nll32, grad32] = loss_and_grad(Precision::kFp32);
  const auto [nll16, grad16] = loss_and_grad(Precision::kBf16);
  EXPECT_EQ(nll16.scalar_type(), torch::kFloat32);
  EXPECT_LT(max_abs_diff(nll16, nll32), 0.05);
  EXPECT_GT(max_abs_diff(nll16, nll32), 0.0) << "the bf16 pass must really run in bf16";
  EXPECT_LT(std::abs(nll16.mean().item<double>() - nll32.mean().item<double>()), 0.01);
  ASSERT_EQ(grad16.sizes(), grad32.sizes());
  const double cosine =
      (grad16 * grad32).sum().item<double>() / (grad16.norm() * grad32.norm()).item<double>();
  EXPECT_GT(cosine, 0.99);
  EXPECT_LT((grad16.norm() / grad32.norm()).item<double>(), 1.05);
  EXPECT_GT((grad16.norm() / grad32.norm()).item<double>(), 0.95);
}

INSTANTIATE_TEST_SUITE_P(Encodings, Bf16Autocast, ::testing::ValuesIn(testing::all_encodings()),
                         testing::EncodingName());

TEST(QueryBlocks, OutputBlocksOnlyWithoutGradientsOrLogits) {
  ForwardOptions o;
  o.targets = torch::zeros({1, 1}, torch::kLong);
  {
    torch::NoGradGuard no_grad;
    EXPECT_EQ(output_row_block(100, 10000, o), 100);  // 4 MB of logits: one pass
    // L = 65536 rows x 10k words = 2.6 GB at once; blocks of 64 MiB / 40 kB = 1677 rows.
    EXPECT_EQ(output_row_block(65536, 10000, o), (int64_t{64} << 20) / 40000);
    ForwardOptions logits = o;
    logits.want_scores = true;
    EXPECT_EQ(output_row_block(65536, 10000, logits), 65536);
    ForwardOptions off = o;
    off.query_block = -1;
    EXPECT_EQ(output_row_block(65536, 10000, off), 65536);
  }
  EXPECT_EQ(output_row_block(65536, 10000, o), 65536);  // gradients on: one pass
}

TEST(QueryBlocks, AutomaticBlocksOnlyPastTheBudget) {
  EXPECT_EQ(attention_query_block(1, 4, 512, 512, 0, false), 512);  // 8 MiB: one pass
  // L = 16384, 4 heads: 2 GiB of scores at once; blocks of 256 MiB / (2 * 4 * 16384 * 4).
  EXPECT_EQ(attention_query_block(1, 4, 16384, 16384, 0, false), 512);
  EXPECT_EQ(attention_query_block(1, 4, 16384, 16384, -1, false), 16384);
}

}  // namespace
}  // namespace txl
