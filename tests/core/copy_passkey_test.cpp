// The instance builders of the copy and passkey probes: the copy's second span equals the
// first at exactly distance d and the control differs only in its first span; the passkey's
// key sits at the stated depth, never occurs in the filler, and every window has exactly
// the stated length; the same seed draws the same instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "test_util.h"
#include "txl/probe/copy_distance.h"
#include "txl/probe/passkey_windows.h"
#include "txl/util/error.h"

namespace txl {
namespace {

std::vector<int32_t> iota_ids(int32_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) ids[size_t(i)] = i;  // every token distinct: positions readable
  return ids;
}

std::vector<int32_t> part(const std::vector<int32_t>& w, int64_t from, int64_t len) {
  return {w.begin() + from, w.begin() + from + len};
}

TEST(CopyInstances, SecondSpanEqualsTheFirstAtExactlyDistanceD) {
  const auto ids = iota_ids(1000);
  constexpr int64_t kSpan = 5, kD = 17;
  const auto instances = build_copy_instances(ids, kSpan, kD, 10, 3);
  ASSERT_EQ(instances.size(), 10u);
  for (const auto& inst : instances) {
    ASSERT_EQ(inst.repeated.size(), size_t(2 * kSpan + kD));
    ASSERT_EQ(inst.control.size(), inst.repeated.size());
    const auto a = part(inst.repeated, 0, kSpan);
    EXPECT_EQ(part(inst.repeated, kSpan + kD, kSpan), a);
    EXPECT_EQ(a, part(ids, inst.span_start, kSpan));
    // The filler follows the first span directly: d tokens, none of them from A.
    EXPECT_EQ(part(inst.repeated, kSpan, kD), part(inst.control, kSpan, kD));
    for (const int32_t tok : part(inst.repeated, kSpan, kD))
      EXPECT_EQ(std::count(a.begin(), a.end(), tok), 0);
    // The control differs in its first span only.
    EXPECT_EQ(part(inst.control, kSpan + kD, kSpan), a);
    const auto b = part(inst.control, 0, kSpan);
    for (const int32_t tok : b) EXPECT_EQ(std::count(a.begin(), a.end(), tok), 0);
  }
  EXPECT_EQ(build_copy_instances(ids, kSpan, kD, 10, 3)[4].repeated, instances[4].repeated);
  EXPECT_NE(build_copy_instances(ids, kSpan, kD, 10, 4)[4].repeated, instances[4].repeated);
  EXPECT_THROW(build_copy_instances(ids, 200, 700, 1, 3), InputError);  // 1100 > 1000 tokens
}

// Filler tokens 0..29; candidates 40..44 never occur in it.
std::vector<int32_t> filler_ids() {
  std::vector<int32_t> ids;
  for (int i = 0; i < 600; ++i) ids.push_back((i * 7 + i / 30) % 30);
  return ids;
}

PasskeyProbeOptions passkey_options() {
  PasskeyProbeOptions o;
  o.lengths = {40, 64};
  o.depths = {0.0, 0.5, 1.0};
  o.trials = 3;
  o.key_len = 3;
  o.cue_len = 4;
  o.seed = 5;
  return o;
}

TEST(PasskeyInstances, KeyAtTheStatedDepthNeverInTheFillerWindowOfExactLength) {
  const std::vector<int32_t> candidates = {40, 41, 42, 43, 44};
  const auto o = passkey_options();
  const auto instances = build_passkey_instances(filler_ids(), candidates, o);
  ASSERT_EQ(instances.size(), 2u * 3u * 3u);
  for (const auto& inst : instances) {
    SCOPED_TRACE(::testing::Message() << inst.length << " " << inst.depth);
    const int64_t l = inst.length, filler = l - 2 * (o.cue_len + o.key_len);
    ASSERT_EQ(static_cast<int64_t>(inst.window.size()), l);
    EXPECT_EQ(inst.needle_start, std::llround(inst.depth * double(filler)));
    EXPECT_EQ(inst.key_start, inst.needle_start + o.cue_len);
    EXPECT_EQ(part(inst.window, inst.key_start, o.key_len), inst.key);
    EXPECT_EQ(part(inst.window, l - o.key_len, o.key_len), inst.key);  // scored at the end
    EXPECT_EQ(part(inst.window, inst.needle_start, o.cue_len),
              part(inst.window, l - o.key_len - o.cue_len, o.cue_len));  // the cue, twice
    for (const int32_t k : inst.key)
      EXPECT_TRUE(std::count(candidates.begin(), candidates.end(), k));
    // Outside the two keys no token is a candidate, so none is a key token.
    std::vector<int32_t> rest = part(inst.window, 0, inst.key_start);
    const auto tail =
        part(inst.window, inst.key_start + o.key_len, l - o.key_len - inst.key_start - o.key_len);
    rest.insert(rest.end(), tail.begin(), tail.end());
    for (const int32_t tok : rest) EXPECT_LT(tok, 40);
  }
  // depth 0: the needle opens the window; depth 1: it ends just before the final cue.
  EXPECT_EQ(instances[0].needle_start, 0);
  EXPECT_EQ(instances[6].key_start + o.key_len, 40 - o.key_len - o.cue_len);
  EXPECT_EQ(build_passkey_instances(filler_ids(), candidates, o)[7].window, instances[7].window);
}

TEST(PasskeyInstances, RefusesWhatCannotBeBuilt) {
  auto o = passkey_options();
  o.lengths = {14};  // 2 x (4 + 3) = 14 leaves no filler
  EXPECT_THROW(build_passkey_instances(filler_ids(), {40}, o), InputError);
  o.lengths = {40};
  EXPECT_THROW(build_passkey_instances(filler_ids(), {3, 5}, o), InputError);  // in the filler
  EXPECT_THROW(build_passkey_instances(filler_ids(), {}, o), InputError);
  o.lengths = {700};
  EXPECT_THROW(build_passkey_instances(filler_ids(), {40}, o), InputError);  // split too short
}

TEST(PasskeyInstances, CandidatesAreDigitsOrTheRarestTokens) {
  Vocab digits(TokenizerKind::kChar, {"<unk>", "a", "1", "b", "7", "c"});
  EXPECT_EQ(passkey_candidates(digits, {}), (std::vector<int32_t>{2, 4}));
  Vocab words(TokenizerKind::kWord, {"<unk>", "<eos>", "the", "ark", "of", "zion"});
  const std::vector<int32_t> split = {2, 2, 2, 4, 4, 3, 5, 5, 1};
  EXPECT_EQ(passkey_candidates(words, split, 2), (std::vector<int32_t>{3, 4}));
}

}  // namespace
}  // namespace txl
