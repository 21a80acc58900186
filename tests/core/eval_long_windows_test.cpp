// Long evaluation windows (issue 14): what a request will need in memory is estimated from
// shapes and refused when it cannot fit; the estimate grows linearly in the length once
// attention and the output layer run in blocks; long evaluations report progress; a length
// longer than the split is labelled, never silently shortened. (The blocked passes equal
// one pass to 1e-5 for every encoding: model_properties_test.cpp, QueryBlocks.)
#include <gtest/gtest.h>

#include "test_util.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/progress.h"
#include "txl/eval/protocols/memory.h"
#include "txl/eval/protocols/sliding.h"
#include "txl/eval/report.h"
#include "txl/model/position_score.h"
#include "txl/util/error.h"

namespace txl {
namespace {

constexpr int64_t kVocab = 13;
constexpr int64_t kTokens = 50;  // 49 targets

std::vector<int32_t> random_ids(int64_t n) {
  torch::manual_seed(3);
  auto t = torch::randint(kVocab, {n}, torch::kInt);
  return std::vector<int32_t>(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + n);
}

TransformerLM make_model() {
  torch::manual_seed(7);
  TransformerLM model(testing::tiny_model(PosEncoding::kRelative), kVocab);
  model->eval();
  return model;
}

EvalRequest request(const std::string& method, int64_t length) {
  EvalRequest r;
  r.protocol = method;
  r.length = length;
  r.batch_tokens = 32;  // two windows of 16 per pass
  r.settings.set(sliding_setting::kStride, 4);
  r.settings.set(memory_setting::kMemLen, 5);
  r.settings.set(memory_setting::kStreams, 3);
  return r;
}

// The demo model (configs/kjv-char-relative.json) on an 80-character vocabulary.
ModelConfig demo_model() {
  ModelConfig c = testing::tiny_model(PosEncoding::kRelative);
  c.n_layer = 3;
  c.d_model = 128;
  c.n_head = 4;
  c.d_head = 32;
  c.d_inner = 512;
  return c;
}

TEST(EvalMemory, LargestPassFollowsTheMethodsWindows) {
  // nonoverlap: 49 targets in 4 windows of 16, two per pass.
  auto p = largest_eval_pass(request("nonoverlap", 16), 49);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.queries, 16);
  EXPECT_EQ(p.keys, 16);
  // A length past the split: one window of the whole split.
  p = largest_eval_pass(request("nonoverlap", 100), 49);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(p.queries, 49);
  // sliding, stride 4: 1 + ceil(33 / 4) = 10 windows, two per pass.
  p = largest_eval_pass(request("sliding", 16), 49);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.queries, 16);
  // memory: 3 streams of 16, 16 and 17 targets; segments of 8 with 5 of memory.
  p = largest_eval_pass(request("memory", 8), 49);
  EXPECT_EQ(p.batch, 3);
  EXPECT_EQ(p.queries, 8);
  EXPECT_EQ(p.keys, 13);
  p = largest_eval_pass(request("memory", 40), 49);
  EXPECT_EQ(p.queries, 17);  // the last stream's 17 targets
  EXPECT_EQ(p.keys, 22);
}

TEST(EvalMemory, TheLargestPassIsTheLongestWindowEvaluationScores) {
  const auto ids = random_ids(kTokens);
  auto model = make_model();
  for (const std::string method : {"nonoverlap", "sliding"}) {
    for (const int64_t len : {4, 16, 49, 100}) {
      const auto r = request(method, len);
      EXPECT_EQ(longest_window(evaluate(model, ids, r)),
                largest_eval_pass(r, scored_targets(r, kTokens)).queries)
          << method << " L=" << len;
    }
  }
  for (const int64_t len : {4, 16, 100}) {
    const auto r = request("memory", len);
    EXPECT_LE(longest_window(evaluate(model, ids, r)),
              largest_eval_pass(r, scored_targets(r, kTokens)).queries)
        << "memory L=" << len;
  }
  EXPECT_EQ(scored_targets(request("memory", 4), kTokens), 49);
  auto capped = request("nonoverlap", 4);
  capped.max_tokens = 20;
  EXPECT_EQ(scored_targets(capped, kTokens), 20);
}

TEST(EvalMemory, GrowsLinearlyInTheLengthOnceScoresAndLogitsRunInBlocks) {
  const ModelConfig m = demo_model();
  auto at = [&](int64_t length, int64_t vocab) {
    auto r = request("nonoverlap", length);
    r.batch_tokens = 8192;
    return estimate_eval_footprint(m, vocab, r, int64_t{1} << 20);
  };
  // Past the score budget (one layer's scores of 4 x 16384 x 16384 floats are 4 GiB), the
  // estimate is linear in the length: doubling the length again adds twice as much (a
  // quadratic term would add four times as much); the attention block stays near the budget.
  for (const int64_t length : {16384, 32768, 65536}) {
    const double e1 = at(length, 80).total_bytes(), e2 = at(2 * length, 80).total_bytes(),
                 e4 = at(4 * length, 80).total_bytes();
    // (Slightly under 2 where the logits reach their block size and stop growing.)
    EXPECT_GT((e4 - e2) / (e2 - e1), 1.8) << length;
    EXPECT_LT((e4 - e2) / (e2 - e1), 2.01) << length;
    EXPECT_LE(at(length, 80).attention_bytes, 1.5 * static_cast<double>(kScoreBudgetBytes))
        << length;
  }
  // Before it, attention is quadratic: 512 -> 1024 on one window per pass is ~4x.
  auto r512 = request("nonoverlap", 512), r1024 = request("nonoverlap", 1024);
  const auto small = estimate_eval_footprint(m, 80, r512, 512).attention_bytes;
  const auto large = estimate_eval_footprint(m, 80, r1024, 1024).attention_bytes;
  EXPECT_DOUBLE_EQ(large, 4 * small);
  // A 33k-word vocabulary at 65536: logits in blocks, not 65536 x 33278 floats (8.7 GB).
  EXPECT_LT(at(65536, 33278).output_bytes, 3.0 * static_cast<double>(kLogitBudgetBytes));
  // Memory adds its rows [B, M, C] and their key/value projection [B, M, 2*H*D], per layer,
  // in and out.
  auto mem = request("memory", 64);
  mem.settings.set(memory_setting::kMemLen, 64);
  mem.settings.set(memory_setting::kStreams, 1);
  EXPECT_DOUBLE_EQ(estimate_eval_footprint(m, 80, mem, 10000).memory_bytes,
                   4.0 * 2 * 3 * 64 * (128 + 2 * 4 * 32));
}

TEST(EvalMemory, AnAdaptiveRunsLogitsAreSizedByItsHead) {
  // WikiText-2's 33,278 words at cutoffs 2,000/10,000: a row the NLL computes is the head's
  // 2,002 scores and the widest tail's 23,278, not 33,278 (the full softmax's size over-stated
  // an adaptive run's logits).
  ModelConfig m = demo_model();
  auto r = request("nonoverlap", 512);
  // One block of 512 rows (under the 64 MB budget at 25,280 floats a row), twice (scores and
  // log-probabilities), and the NLL of every row.
  m.adaptive = AdaptiveConfig{{2000, 10000}, 1, {true, true, true}};
  EXPECT_DOUBLE_EQ(estimate_eval_footprint(m, 33278, r, 512).output_bytes,
                   4.0 * (2 * 512 * (2002 + 23278) + 512));
}

TEST(EvalMemory, RefusesWhatCannotFitNamingTheEstimate) {
  const ModelConfig m = demo_model();
  auto r = request("nonoverlap", 65536);
  const auto e = estimate_eval_footprint(m, 80, r, 1000000);
  EXPECT_NO_THROW(check_eval_footprint(e, r, 0));  // unknown: nothing checked
  EXPECT_NO_THROW(check_eval_footprint(e, r, e.total_bytes()));
  testing::expect_input_error(
      [&] { check_eval_footprint(e, r, 0.5 * e.total_bytes()); },
      {"length 65536 (1 window of 65536 tokens)", "of memory", "evaluate shorter lengths"});
  auto mem = request("memory", 4096);
  mem.settings.set(memory_setting::kMemLen, 4096);
  testing::expect_input_error(
      [&] { check_eval_footprint(estimate_eval_footprint(m, 80, mem, 1000000), mem, 1.0); },
      {"fewer --streams"});
}

TEST(EvalProgress, EveryMethodReportsUpToAllItsWindows) {
  const auto ids = random_ids(kTokens);
  auto model = make_model();
  for (const std::string method : {"nonoverlap", "sliding", "memory"}) {
    std::vector<EvalProgress> seen;
    const auto result =
        evaluate(model, ids, request(method, 8), [&](const EvalProgress& p) { seen.push_back(p); });
    ASSERT_FALSE(seen.empty()) << method;
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_GE(seen[i].fraction, seen[i - 1].fraction) << method << " " << i;
      EXPECT_GE(seen[i].windows_done, seen[i - 1].windows_done) << method;
    }
    const auto windows = static_cast<int64_t>(result.window_nll.size());
    EXPECT_EQ(seen.back().windows, windows) << method;
    EXPECT_EQ(seen.back().windows_done, windows) << method;
    EXPECT_DOUBLE_EQ(seen.back().fraction, 1.0) << method;
    EXPECT_GT(seen.front().fraction, 0.0) << method;
  }
}

TEST(EvalProgress, ALayerThatAttendsInBlocksReportsEachBlock) {
  auto model = make_model();
  torch::NoGradGuard no_grad;
  std::vector<double> seen;
  ForwardOptions o;
  o.query_block = 3;
  o.progress = [&](double layers) { seen.push_back(layers); };
  model->forward(torch::randint(kVocab, {1, 12}, torch::kLong), {}, o);
  // 2 layers x (4 blocks + the layer's end).
  ASSERT_EQ(seen.size(), 10u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]) << i;
  EXPECT_DOUBLE_EQ(seen[3], 1.0);  // the last block of layer 0
  EXPECT_DOUBLE_EQ(seen.back(), 2.0);
  EXPECT_DOUBLE_EQ(seen[0], 9.0 / 144.0);  // keys 0..2 of 12: 3^2 / 12^2 of the work
}

TEST(EvalProgress, LinesNameTheFractionWindowsAndTimeLeft) {
  EvalProgress one{0, 1, 0.25};
  EXPECT_EQ(format_eval_progress("length 65536", one, 60.0),
            "  length 65536: 25% of 1 window, 01:00 elapsed, about 03:00 left");
  EvalProgress many{3, 10, 0.3};
  EXPECT_EQ(format_eval_progress("L=512", many, 30.0),
            "  L=512: 30% of 10 windows (3 done), 00:30 elapsed, about 01:10 left");
  EvalProgress done{10, 10, 1.0};
  EXPECT_EQ(format_eval_progress("L=512", done, 100.0),
            "  L=512: 100% of 10 windows (10 done), 01:40 elapsed");
}

TEST(ShortSplit, ALengthPastTheSplitIsLabelledInTableAndJson) {
  const auto ids = random_ids(kTokens);
  auto model = make_model();
  const auto past = evaluate(model, ids, request("nonoverlap", 100));
  EXPECT_EQ(past.length, 100);
  EXPECT_EQ(longest_window(past), 49);
  const std::string note = short_window_note(past);
  EXPECT_NE(note.find("1 window of at most 49 tokens, not 100"), std::string::npos) << note;
  EXPECT_EQ(summary_to_json(past, false, {})["window"], 49);

  const auto fits = evaluate(model, ids, request("nonoverlap", 16));
  EXPECT_EQ(short_window_note(fits), "");
  EXPECT_EQ(summary_to_json(fits, false, {})["window"], 16);

  EvalReport report;
  report.results = {fits, past};
  const std::string table = format_report_table(report);
  EXPECT_NE(table.find("! length 100: only 49 tokens were scored"), std::string::npos) << table;
  EXPECT_EQ(table.find("! length 16"), std::string::npos) << table;
}

// Issue 44: a length as long as int64 allows is a length past the split (one window of it
// all), not a request for a table of 9.2e18 position buckets.
TEST(ShortSplit, TheLongestLengthScoresAsAnyLengthPastTheSplitDoes) {
  const auto ids = random_ids(kTokens);
  auto model = make_model();
  for (const std::string method : {"nonoverlap", "sliding", "memory"}) {
    auto past = request(method, 100), longest = request(method, INT64_MAX);
    past.position_buckets = longest.position_buckets = 8;
    const auto a = evaluate(model, ids, past), b = evaluate(model, ids, longest);
    EXPECT_EQ(b.length, INT64_MAX);
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_NEAR(b.nll, a.nll, 1e-9 * std::abs(a.nll));
    ASSERT_FALSE(b.position_start.empty());
    EXPECT_LT(b.position_start.back(), kTokens);
  }
}

}  // namespace
}  // namespace txl
