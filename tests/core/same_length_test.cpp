// Transformer-XL's same_length (positional.h, attention_mask): every query attends over at
// most the key_window most recent keys. Checked against
//  - the reference's mask, written from its formula: triu(ones(Q, K), 1 + M) +
//    tril(ones(Q, K), -s), s = Q - (K - mem_len) when K > mem_len, else Q;
//  - properties of the whole model, for every encoding that takes memory: a window that hides
//    nothing changes nothing; keys older than every query's window are not read, keys inside
//    one are; segment by segment with memory mem_len equals one pass over everything with the
//    same window (each query sees the same keys either way); query blocks equal one pass;
//  - the memory protocol with --same-length equals that one pass, and a window needs memory.
#include <gtest/gtest.h>

#include "test_util.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/eval/protocols/memory.h"
#include "txl/model/positional.h"
#include "txl/model/transformer.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using testing::max_abs_diff;
using testing::tiny_model;

constexpr int64_t kVocab = 11;

// The reference's mask, from its formula, as a bool [Q, K] (true: hidden).
torch::Tensor reference_mask(int64_t q, int64_t m, int64_t mem_len) {
  const int64_t k = q + m;
  const int64_t s = k > mem_len ? q - (k - mem_len) : q;
  auto ones = torch::ones({q, k}, torch::kInt);
  return (ones.triu(1 + m) + ones.tril(-s)).gt(0);
}

TEST(SameLengthMask, EqualsTheReferenceFormula) {
  for (int64_t q : {1, 3, 8}) {
    for (int64_t m : {0, 2, 8, 12}) {
      for (int64_t window : {1, 4, 8, 10, 20}) {
        const auto got = attention_mask(q, m, window);
        EXPECT_TRUE(got.equal(reference_mask(q, m, window)))
            << "Q " << q << " M " << m << " window " << window;
        // Every query sees min(its causal keys, window) keys.
        const auto seen = got.logical_not().sum(1);
        for (int64_t i = 0; i < q; ++i)
          EXPECT_EQ(seen[i].item<int64_t>(), std::min(m + i + 1, window));
      }
    }
  }
  EXPECT_TRUE(attention_mask(4, 3, 0).equal(causal_mask(4, 3)));  // 0: no window
  EXPECT_FALSE(window_cuts(4, 3, 7));
  EXPECT_TRUE(window_cuts(4, 3, 6));
}

class SameLength : public ::testing::TestWithParam<PosEncoding> {
 protected:
  TransformerLM model() {
    torch::manual_seed(5);
    TransformerLM m(tiny_model(GetParam()), kVocab);
    m->eval();
    return m;
  }
};

LMOutput run(TransformerLM& model, const torch::Tensor& tokens, const Memory& mem, int64_t window,
             int64_t keep = 0, int64_t query_block = 0) {
  ForwardOptions o;
  o.key_window = window;
  o.keep_memory = keep;
  o.query_block = query_block;
  return model->forward(tokens, mem, o);
}

TEST_P(SameLength, AWindowThatHidesNothingChangesNothing) {
  auto m = model();
  torch::NoGradGuard no_grad;
  auto first = torch::randint(kVocab, {2, 5}, torch::kLong);
  const auto mem = run(m, first, {}, 0, 5).memory;
  auto tokens = torch::randint(kVocab, {2, 6}, torch::kLong);
  const auto plain = run(m, tokens, mem, 0).scores;
  EXPECT_LT(max_abs_diff(run(m, tokens, mem, 11).scores, plain), 1e-6);  // K = 11
  EXPECT_GT(max_abs_diff(run(m, tokens, mem, 10).scores, plain), 1e-5);  // one key hidden
}

// Memory rows older than the first query's window are older than every query's window, in
// every layer: changing them changes nothing. The oldest row inside it changes the output.
TEST_P(SameLength, KeysOutsideTheWindowAreNotRead) {
  auto m = model();
  torch::NoGradGuard no_grad;
  const int64_t mem_len = 6, q = 4, window = 4;  // query 0 sees memory rows 3..5 and itself
  const auto first = torch::randint(kVocab, {2, mem_len}, torch::kLong);
  const Memory mem = run(m, first, {}, 0, mem_len).memory;
  const auto tokens = torch::randint(kVocab, {2, q}, torch::kLong);
  const auto base = run(m, tokens, mem, window).scores;
  const auto changed = [&](int64_t row) {
    Memory altered;
    for (const auto& layer : mem.layers) {
      auto l = layer.clone();
      l.narrow(1, row, 1).normal_();
      altered.layers.push_back(l);
    }
    return run(m, tokens, altered, window).scores;
  };
  const int64_t oldest_seen = mem_len - window + 1;  // M + 0 - window + 1
  for (int64_t row = 0; row < oldest_seen; ++row)
    EXPECT_LT(max_abs_diff(changed(row), base), 1e-6) << "memory row " << row;
  EXPECT_GT(max_abs_diff(changed(oldest_seen).narrow(1, 0, 1), base.narrow(1, 0, 1)), 1e-5);
}

// With the window, segment by segment (memory of `window` rows) equals one pass with it:
// every query sees the same `window` keys, whose states saw the same keys in turn.
TEST_P(SameLength, SegmentsWithMemoryEqualOneWindowedPass) {
  auto m = model();
  torch::NoGradGuard no_grad;
  const int64_t window = 5;
  const auto tokens = torch::randint(kVocab, {2, 14}, torch::kLong);
  const auto whole = run(m, tokens, {}, window).scores;  // [B, 14, V]
  Memory mem;
  for (int64_t start = 0; start < 14; start += 4) {
    const int64_t len = std::min<int64_t>(4, 14 - start);
    auto out = run(m, tokens.narrow(1, start, len), mem, window, window);
    EXPECT_LT(max_abs_diff(out.scores, whole.narrow(1, start, len)), 1e-5) << "at " << start;
    mem = out.memory;
  }
}

TEST_P(SameLength, QueryBlocksEqualOnePass) {
  auto m = model();
  torch::NoGradGuard no_grad;
  const auto first = torch::randint(kVocab, {2, 6}, torch::kLong);
  const Memory mem = run(m, first, {}, 0, 6).memory;
  const auto tokens = torch::randint(kVocab, {2, 9}, torch::kLong);
  const auto expected = run(m, tokens, mem, 7, 0, -1).scores;
  for (const int64_t block : {1, 2, 4})
    EXPECT_LT(max_abs_diff(run(m, tokens, mem, 7, 0, block).scores, expected), 1e-5) << block;
}

// The memory protocol with same_length scores each token as one windowed pass over the
// whole split does; without it, the scores differ once memory is full.
TEST_P(SameLength, MemoryProtocolEqualsOneWindowedPass) {
  auto m = model();
  torch::manual_seed(9);
  const auto ids_t = torch::randint(kVocab, {40}, torch::kInt);
  const std::vector<int32_t> ids(ids_t.data_ptr<int32_t>(), ids_t.data_ptr<int32_t>() + 40);
  EvalRequest r;
  r.protocol = "memory";
  r.length = 5;
  r.settings.set(memory_setting::kMemLen, 6);
  r.settings.set(memory_setting::kStreams, 1);
  r.settings.set(memory_setting::kSameLength, true);
  const auto result = evaluate(m, ids, r);
  EXPECT_TRUE(result.settings.get(memory_setting::kSameLength));
  torch::NoGradGuard no_grad;
  ForwardOptions o;
  o.key_window = 6;
  o.targets = ids_t.narrow(0, 1, 39).to(torch::kLong).unsqueeze(0);
  const auto nll = m->forward(ids_t.narrow(0, 0, 39).to(torch::kLong).unsqueeze(0), {}, o).nll;
  EXPECT_NEAR(result.nll, nll.sum().item<double>(), 1e-3);
  r.settings.set(memory_setting::kSameLength, false);
  EXPECT_GT(std::abs(evaluate(m, ids, r).nll - result.nll), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Encodings, SameLength, ::testing::ValuesIn(testing::memory_encodings()),
                         testing::EncodingName());

TEST(SameLengthRequest, NeedsMemoryAndTheMemoryProtocol) {
  torch::manual_seed(1);
  TransformerLM model(tiny_model(PosEncoding::kRelative), kVocab);
  EvalRequest r;
  r.protocol = "memory";
  r.length = 4;
  r.settings.set(memory_setting::kMemLen, 0);
  r.settings.set(memory_setting::kSameLength, true);
  testing::expect_input_error([&] { check_eval_request(model, r); }, {"--mem-len >= 1"});
  r.settings.set(memory_setting::kMemLen, 4);
  EXPECT_NO_THROW(check_eval_request(model, r));
  // Its own setting in the cache key and the report column.
  nlohmann::json key;
  add_settings_to_key(eval_protocol("memory"), resolved_settings(r), key);
  EXPECT_EQ(key.value(memory_setting::kSameLength, false), true);
  EvalResult result;
  result.settings = {{memory_setting::kMemLen, 4},
                     {memory_setting::kStreams, 2},
                     {memory_setting::kSameLength, 1}};
  EXPECT_EQ(settings_text(eval_protocol("memory"), result.settings), "mem 4 x2 same");
}

}  // namespace
}  // namespace txl
