// Each evaluation method against a result computed by hand in the test, on a tiny model
// with random weights in eval mode (no training needed: the methods are about which
// tokens are scored with which context, not about what the model learned):
//  - nonoverlap = exp(mean NLL) over windows cut by hand, each scored in its own pass;
//  - sliding with stride 1 = each target scored with exactly min(t, L-1) earlier tokens;
//    sliding with stride S = each target scored inside the window that the protocol assigns;
//  - memory with mem_len >= corpus = one full-context pass; several streams score every
//    token exactly once, each stream as if alone;
//  - per-position buckets, token counts, invalid requests, intervals and the result cache.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/eval/cache.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/interval.h"
#include "txl/eval/protocols/memory.h"
#include "txl/eval/protocols/sliding.h"
#include "txl/model/sampling.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {
namespace {

constexpr int64_t kVocab = 13;
constexpr int64_t kTokens = 50;  // N: the corpus; N - 1 targets

std::vector<int32_t> random_ids(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  auto t = torch::randint(kVocab, {n}, torch::kInt);
  return std::vector<int32_t>(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + n);
}

TransformerLM make_model(PosEncoding encoding) {
  torch::manual_seed(7);
  TransformerLM model(testing::tiny_model(encoding), kVocab);
  model->eval();
  return model;
}

// NLL (double) of each target of one contiguous piece ids[start, start + len) predicting
// ids[start + 1, start + len + 1), computed from the logits of a single forward pass.
std::vector<double> piece_nll(TransformerLM& model, const std::vector<int32_t>& ids, int64_t start,
                              int64_t len) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> in(ids.begin() + start, ids.begin() + start + len);
  auto logits =
      model->forward(torch::tensor(in, torch::kLong).unsqueeze(0), {}, {}).scores[0];  // [len, V]
  auto logp = torch::log_softmax(logits.to(torch::kFloat64), -1);
  std::vector<double> out;
  for (int64_t i = 0; i < len; ++i) out.push_back(-logp[i][ids[start + i + 1]].item<double>());
  return out;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

const std::vector<PosEncoding> kAll = testing::all_encodings();
const std::vector<PosEncoding> kWithMemory = testing::memory_encodings();

TEST(EvalMethods, NonOverlapEqualsWindowsScoredByHand) {
  const auto ids = random_ids(kTokens, 1);
  for (auto encoding : kAll) {
    auto model = make_model(encoding);
    const int64_t len = 8;
    EvalRequest r;
    r.length = len;
    const auto result = evaluate(model, ids, r);
    double total = 0;
    std::vector<double> windows;
    for (int64_t s = 0; s < kTokens - 1; s += len) {  // 49 targets: six windows of 8, one of 1
      windows.push_back(sum(piece_nll(model, ids, s, std::min(len, kTokens - 1 - s))));
      total += windows.back();
    }
    ASSERT_EQ(result.tokens, kTokens - 1);
    ASSERT_EQ(result.window_nll.size(), windows.size());
    for (size_t w = 0; w < windows.size(); ++w) EXPECT_NEAR(result.window_nll[w], windows[w], 1e-4);
    EXPECT_NEAR(result.ppl(), std::exp(total / (kTokens - 1)), 1e-5 * result.ppl())
        << to_string(encoding);
  }
}

TEST(EvalMethods, SlidingStrideOneScoresEachTokenWithExactlyLMinusOneTokensOfContext) {
  const auto ids = random_ids(kTokens, 2);
  for (auto encoding : kAll) {
    auto model = make_model(encoding);
    const int64_t len = 6;
    EvalRequest r;
    r.protocol = "sliding";
    r.length = len;
    r.settings.set(sliding_setting::kStride, 1);
    const auto result = evaluate(model, ids, r);
    // Target t (predicting ids[t+1]) sees ids[max(0, t-L+1) .. t]: min(t, L-1) earlier tokens.
    double total = 0;
    for (int64_t t = 0; t < kTokens - 1; ++t) {
      const int64_t start = std::max<int64_t>(0, t - len + 1);
      total += piece_nll(model, ids, start, t - start + 1).back();
    }
    EXPECT_EQ(result.tokens, kTokens - 1);
    EXPECT_EQ(result.settings.get(sliding_setting::kStride), 1);
    EXPECT_NEAR(result.nll, total, 1e-4) << to_string(encoding);
  }
}

TEST(EvalMethods, SlidingWithStrideScoresEachTargetOnceInItsWindow) {
  const auto ids = random_ids(kTokens, 3);
  auto model = make_model(PosEncoding::kAbsolute);
  const int64_t len = 8, stride = 3, n_targets = kTokens - 1;
  EvalRequest r;
  r.protocol = "sliding";
  r.length = len;
  r.settings.set(sliding_setting::kStride, stride);
  const auto result = evaluate(model, ids, r);
  // The first window [0, L) scores its L targets; afterwards, target t >= L belongs to the
  // window that ends at L + S * (floor((t - L) / S) + 1) (cut at the corpus end) and starts
  // L earlier.
  double total = 0;
  for (int64_t t = 0; t < n_targets; ++t) {
    int64_t start = 0;
    if (t >= len) {
      const int64_t end = std::min(n_targets, len + stride * ((t - len) / stride + 1));
      start = end - len;
    }
    total += piece_nll(model, ids, start, t - start + 1).back();
  }
  EXPECT_EQ(result.tokens, n_targets);
  EXPECT_NEAR(result.nll, total, 1e-4);
  // The default stride is L/2.
  r.settings = {};
  EXPECT_EQ(evaluate(model, ids, r).settings.get(sliding_setting::kStride), len / 2);
}

TEST(EvalMethods, MemoryWithMemLenCoveringTheCorpusEqualsOneFullContextPass) {
  const auto ids = random_ids(kTokens, 4);
  for (auto encoding : kWithMemory) {
    auto model = make_model(encoding);
    EvalRequest r;
    r.protocol = "memory";
    r.length = 7;
    r.settings.set(memory_setting::kMemLen, kTokens);
    r.settings.set(memory_setting::kStreams, 1);
    const auto result = evaluate(model, ids, r);
    const auto full = piece_nll(model, ids, 0, kTokens - 1);
    EXPECT_EQ(result.tokens, kTokens - 1);
    EXPECT_EQ(result.window_nll.size(), 7u);  // ceil(49 / 7) segments
    EXPECT_NEAR(result.nll, sum(full), 1e-3) << to_string(encoding);
    // Segment by segment, too: segment k holds targets [7k, 7k + 7).
    for (size_t k = 0; k < result.window_nll.size(); ++k) {
      const std::vector<double> part(full.begin() + 7 * k, full.begin() + 7 * k + 7);
      EXPECT_NEAR(result.window_nll[k], sum(part), 1e-4) << "segment " << k;
    }
  }
}

TEST(EvalMethods, MemoryWithSeveralStreamsScoresEveryTokenOnceEachStreamAsIfAlone) {
  const auto ids = random_ids(kTokens, 5);
  auto model = make_model(PosEncoding::kRelative);
  EvalRequest r;
  r.protocol = "memory";
  r.length = 5;
  r.settings.set(memory_setting::kMemLen, kTokens);
  r.settings.set(memory_setting::kStreams, 3);
  const auto result = evaluate(model, ids, r);
  EXPECT_EQ(result.tokens, kTokens - 1);
  EXPECT_EQ(result.settings.get(memory_setting::kStreams), 3);
  // 49 targets: streams of 16, 16 and 17 (the last takes the remainder); with unlimited
  // memory each stream equals one pass over its own tokens.
  double total = 0;
  total += sum(piece_nll(model, ids, 0, 16));
  total += sum(piece_nll(model, ids, 16, 16));
  total += sum(piece_nll(model, ids, 32, 17));
  EXPECT_NEAR(result.nll, total, 1e-3);
  int64_t counted = 0;
  for (auto t : result.window_tokens) counted += t;
  EXPECT_EQ(counted, kTokens - 1);
}

TEST(EvalMethods, MemoryLimitedToMemLenEqualsAPassOverThatContext) {
  // mem_len 4, segments of 4: the second segment's targets see exactly the 4 tokens before
  // the segment, i.e. one pass over ids[0, 8) scores targets 4..7 like the method. Only
  // with one layer: deeper layers' memory holds states that themselves saw further back
  // (Transformer-XL's receptive field grows by mem_len per layer).
  const auto ids = random_ids(kTokens, 6);
  torch::manual_seed(7);
  auto cfg = testing::tiny_model(PosEncoding::kRelative);
  cfg.n_layer = 1;
  TransformerLM model(cfg, kVocab);
  model->eval();
  EvalRequest r;
  r.protocol = "memory";
  r.length = 4;
  r.settings.set(memory_setting::kMemLen, 4);
  r.settings.set(memory_setting::kStreams, 1);
  r.max_tokens = 12;
  const auto result = evaluate(model, ids, r);
  ASSERT_EQ(result.window_nll.size(), 3u);
  const auto second = piece_nll(model, ids, 0, 8);
  EXPECT_NEAR(result.window_nll[1], second[4] + second[5] + second[6] + second[7], 1e-4);
  const auto third = piece_nll(model, ids, 4, 8);
  EXPECT_NEAR(result.window_nll[2], third[4] + third[5] + third[6] + third[7], 1e-4);
}

TEST(EvalMethods, EveryMethodCountsItsTokensAndHonoursMaxTokens) {
  const auto ids = random_ids(kTokens, 7);
  auto model = make_model(PosEncoding::kRelative);
  for (const std::string method : {"nonoverlap", "sliding", "memory"}) {
    for (int64_t len : {1, 4, 9, 64}) {
      EvalRequest r;
      r.protocol = method;
      r.length = len;
      r.settings.set(memory_setting::kMemLen, len);
      EXPECT_EQ(evaluate(model, ids, r).tokens, kTokens - 1) << method << " L=" << len;
      r.max_tokens = 20;
      EXPECT_EQ(evaluate(model, ids, r).tokens, 20) << method << " L=" << len;
    }
  }
}

TEST(EvalMethods, PerPositionBucketsAverageTheTokensAtEachWindowPosition) {
  const auto ids = random_ids(kTokens, 8);
  auto model = make_model(PosEncoding::kAbsolute);
  EvalRequest r;
  r.length = 8;
  r.position_buckets = 4;  // buckets of 2 positions
  const auto result = evaluate(model, ids, r);
  ASSERT_EQ(result.position_nll.size(), 4u);
  EXPECT_EQ(result.position_start, (std::vector<int64_t>{0, 2, 4, 6}));
  std::vector<double> sums(4, 0.0);
  std::vector<int64_t> counts(4, 0);
  for (int64_t s = 0; s < kTokens - 1; s += 8) {
    const auto nll = piece_nll(model, ids, s, std::min<int64_t>(8, kTokens - 1 - s));
    for (size_t p = 0; p < nll.size(); ++p) {
      sums[p / 2] += nll[p];
      counts[p / 2] += 1;
    }
  }
  for (size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(result.position_count[b], counts[b]);
    EXPECT_NEAR(result.position_nll[b], sums[b] / counts[b], 1e-5) << "bucket " << b;
  }
}

TEST(EvalMethods, InvalidRequestsAreInputErrors) {
  const auto ids = random_ids(kTokens, 9);
  auto relative = make_model(PosEncoding::kRelative);
  auto absolute = make_model(PosEncoding::kAbsolute);
  EvalRequest r;
  r.length = 0;
  EXPECT_THROW(evaluate(relative, ids, r), InputError);
  r.length = 8;
  r.protocol = "sliding";
  r.settings.set(sliding_setting::kStride, 9);
  EXPECT_THROW(evaluate(relative, ids, r), InputError);
  r.settings.set(sliding_setting::kStride, -1);
  EXPECT_THROW(evaluate(relative, ids, r), InputError);
  r.settings.set(sliding_setting::kStride, 8);
  EXPECT_NO_THROW(evaluate(relative, ids, r));
  r = EvalRequest{};
  r.protocol = "memory";
  r.length = 8;
  // memory with the absolute encoding is refused.
  testing::expect_input_error([&] { evaluate(absolute, ids, r); }, {"absolute"});
  r.settings.set(memory_setting::kMemLen, -1);
  EXPECT_THROW(evaluate(relative, ids, r), InputError);
  r.settings.set(memory_setting::kMemLen, 8);
  r.settings.set(memory_setting::kStreams, 0);
  EXPECT_THROW(evaluate(relative, ids, r), InputError);
  EXPECT_THROW(evaluate(relative, std::vector<int32_t>{3}, EvalRequest{}), InputError);
}

TEST(EvalMethods, EvaluationRestoresTrainingModeAndLeavesWeightsAlone) {
  const auto ids = random_ids(kTokens, 10);
  auto model = make_model(PosEncoding::kRelative);
  auto before = model->parameters()[0].clone();
  model->train();
  EvalRequest r;
  r.length = 8;
  evaluate(model, ids, r);
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(torch::equal(before, model->parameters()[0]));
}

TEST(Intervals, BootstrapIsReproducibleAndBracketsTheEstimate) {
  const auto ids = random_ids(400, 11);
  auto model = make_model(PosEncoding::kRelative);
  EvalRequest r;
  r.length = 8;
  const auto result = evaluate(model, ids, r);
  const auto a = mean_nll_interval(result);
  const auto b = mean_nll_interval(result);
  ASSERT_TRUE(a.valid);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_LT(a.lo, result.mean_nll());
  EXPECT_GT(a.hi, result.mean_nll());
  BootstrapOptions other;
  other.seed = 5;
  EXPECT_NE(mean_nll_interval(result, other).lo, a.lo);
  // One window: no spread to resample.
  r.length = 400;
  EXPECT_FALSE(mean_nll_interval(evaluate(model, ids, r)).valid);
}

TEST(Intervals, BootstrapMatchesTheNormalApproximationForIndependentWindows) {
  // 400 windows of 10 tokens with NLL sums ~ N(20, 2^2): the mean per token is 2.0 and its
  // standard error is 2 / sqrt(400) / 10 = 0.01, so the 95% interval is about +-0.0196.
  EvalResult r;
  SplitMix64 rng(3);
  for (int i = 0; i < 400; ++i) {
    const double u1 = rng.uniform() + 1e-12, u2 = rng.uniform();
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);  // Box-Muller
    r.window_nll.push_back(20.0 + 2.0 * z);
    r.window_tokens.push_back(10);
    r.nll += r.window_nll.back();
    r.tokens += 10;
  }
  const auto ci = mean_nll_interval(r);
  EXPECT_NEAR(ci.hi - ci.lo, 2 * 0.0196, 0.006);
  EXPECT_NEAR((ci.hi + ci.lo) / 2, r.mean_nll(), 0.003);
}

TEST(Intervals, PairedDifferenceUsesTheSameWindows) {
  const auto ids = random_ids(400, 12);
  auto a = make_model(PosEncoding::kRelative);
  torch::manual_seed(99);
  TransformerLM b(testing::tiny_model(PosEncoding::kRelative), kVocab);
  EvalRequest r;
  r.length = 8;
  const auto ra = evaluate(a, ids, r), rb = evaluate(b, ids, r);
  const auto same = paired_difference(ra, ra);
  EXPECT_EQ(same.mean_diff, 0.0);
  EXPECT_EQ(same.diff.lo, 0.0);
  EXPECT_EQ(same.diff.hi, 0.0);
  const auto d = paired_difference(ra, rb);
  EXPECT_NEAR(d.mean_diff, ra.mean_nll() - rb.mean_nll(), 1e-12);
  EXPECT_NEAR(d.ppl_ratio(), ra.ppl() / rb.ppl(), 1e-9);
  EXPECT_LT(d.diff.lo, d.mean_diff);
  EXPECT_GT(d.diff.hi, d.mean_diff);
  // Pairing removes the per-window difficulty both models share: the paired interval is
  // narrower than the two separate intervals.
  const auto ia = mean_nll_interval(ra), ib = mean_nll_interval(rb);
  EXPECT_LT(d.diff.hi - d.diff.lo, (ia.hi - ia.lo) + (ib.hi - ib.lo));
  r.length = 16;
  EXPECT_THROW(paired_difference(ra, evaluate(b, ids, r)), std::invalid_argument);
}

TEST(EvalCache, ResultRoundTripsExactlyAndKeysSeparateRequests) {
  const auto ids = random_ids(kTokens, 13);
  auto model = make_model(PosEncoding::kRelative);
  EvalRequest r;
  r.protocol = "sliding";
  r.length = 8;
  r.position_buckets = 4;
  const auto result = evaluate(model, ids, r);
  const auto back = result_from_json(nlohmann::json::parse(result_to_json(result).dump()));
  EXPECT_EQ(back.nll, result.nll);
  EXPECT_EQ(back.window_nll, result.window_nll);
  EXPECT_EQ(back.window_tokens, result.window_tokens);
  EXPECT_EQ(back.position_nll, result.position_nll);
  EXPECT_EQ(back.settings.get(sliding_setting::kStride),
            result.settings.get(sliding_setting::kStride));

  EvalSubject subject{"valid", checksum_ids(ids), "best.pt", 10, 42};
  const auto key = eval_cache_key(subject, model->config(), r);
  const std::string dir = ::testing::TempDir() + "/txl_eval_cache_" + std::to_string(::getpid());
  const auto path = eval_cache_path(dir, key);
  ASSERT_EQ(write_eval_cache(path, key, result), "");
  ASSERT_TRUE(read_eval_cache(path, key).has_value());
  EXPECT_EQ(read_eval_cache(path, key)->nll, result.nll);
  // Any difference in what the numbers depend on is a miss.
  auto other = r;
  other.settings.set(sliding_setting::kStride, 2);
  EXPECT_NE(eval_cache_key(subject, model->config(), other), key);
  EXPECT_FALSE(read_eval_cache(path, eval_cache_key(subject, model->config(), other)).has_value());
  auto retrained = subject;
  retrained.checkpoint_checksum = 43;
  EXPECT_FALSE(read_eval_cache(path, eval_cache_key(retrained, model->config(), r)).has_value());
  auto edited = subject;
  edited.split_checksum ^= 1;
  EXPECT_FALSE(read_eval_cache(path, eval_cache_key(edited, model->config(), r)).has_value());
  // The default stride (none given) and the explicit L/2 are the same request.
  auto explicit_stride = r;
  explicit_stride.settings.set(sliding_setting::kStride, 4);
  EXPECT_EQ(eval_cache_key(subject, model->config(), explicit_stride), key);
  std::filesystem::remove_all(dir);
}

// Issue 44: an entry that is valid JSON but altered is never believed. Each damage below is
// written to the entry and read back: a miss, with `damage` saying what is wrong (the
// caller warns with it and evaluates again).
TEST(EvalCache, AnEditedOrInconsistentEntryIsAMissNamingTheDamage) {
  const auto ids = random_ids(kTokens, 17);
  auto model = make_model(PosEncoding::kRelative);
  EvalRequest r;
  r.protocol = "nonoverlap";
  r.length = 8;
  r.position_buckets = 4;
  const auto result = evaluate(model, ids, r);
  const EvalSubject subject{"valid", checksum_ids(ids), "best.pt", 10, 42};
  const auto key = eval_cache_key(subject, model->config(), r);
  const std::string dir = ::testing::TempDir() + "/txl_eval_damage_" + std::to_string(::getpid());
  const auto path = eval_cache_path(dir, key);
  ASSERT_EQ(write_eval_cache(path, key, result), "");
  const auto entry = nlohmann::json::parse(testing::read_text(path));
  ASSERT_TRUE(read_eval_cache(path, key).has_value());

  using Edit = std::function<void(nlohmann::json&)>;
  const auto scale_window = [](double f) {
    return Edit([f](nlohmann::json& j) {
      j["result"]["window_nll"][0] = f * j["result"]["window_nll"][0].get<double>();
    });
  };
  const std::vector<std::tuple<std::string, Edit, bool, std::string>> damages = {
      // name, edit, re-digest after the edit (a forger who knows the rule), expected damage
      {"nll_sum",
       [](nlohmann::json& j) {
         j["result"]["nll_sum"] = j["result"]["nll_sum"].get<double>() - 1000;
       },
       false, "digest does not match"},
      {"window", scale_window(2.0), false, "digest does not match"},
      {"digest_removed", [](nlohmann::json& j) { j.erase("digest"); }, false, "digest"},
      {"sum_redigested",
       [](nlohmann::json& j) { j["result"]["nll_sum"] = j["result"]["nll_sum"].get<double>() / 2; },
       true, "windows add up to NLL"},
      {"negative_redigested", [](nlohmann::json& j) { j["result"]["nll_sum"] = -5.0; }, true,
       "nll_sum is not a finite NLL >= 0"},
      {"window_redigested", scale_window(2.0), true, "windows add up to NLL"},
      {"positions_redigested", [](nlohmann::json& j) { j["result"]["position_nll"][0] = 0.0; },
       true, "position buckets do not add up"},
  };
  for (const auto& [name, edit, redigest, expected] : damages) {
    auto j = entry;
    edit(j);
    if (redigest) j = with_digest(j);
    testing::write_text(path, j.dump());
    std::string damage;
    EXPECT_FALSE(read_eval_cache(path, key, &damage).has_value()) << name;
    EXPECT_NE(damage.find(expected), std::string::npos) << name << ": " << damage;
  }
  testing::write_text(path, entry.dump().substr(0, 100));  // truncated
  std::string damage;
  EXPECT_FALSE(read_eval_cache(path, key, &damage).has_value());
  EXPECT_NE(damage.find("not valid JSON"), std::string::npos) << damage;
  // Another key is a miss, not damage.
  testing::write_text(path, entry.dump());
  auto retrained = subject;
  retrained.checkpoint_checksum = 43;
  damage.clear();
  EXPECT_FALSE(read_eval_cache(path, eval_cache_key(retrained, model->config(), r), &damage));
  EXPECT_EQ(damage, "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace txl
