// Random segment lengths in training (train.tgt_len_max): drawn in range from (seed, step)
// alone, so resume draws the same; the batcher keeps streams contiguous whatever the length;
// a run with them trains, and records the key in its config.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.h"
#include "txl/train/batcher.h"

namespace txl {
namespace {

TEST(SegmentLength, FixedWithoutAMaximum) {
  TrainConfig t;
  t.tgt_len = 32;
  for (int64_t step = 1; step < 50; ++step) EXPECT_EQ(segment_length(t, step), 32);
  t.tgt_len_max = 32;
  EXPECT_EQ(segment_length(t, 7), 32);
}

TEST(SegmentLength, DrawnInRangeCoveringItAndRepeatableFromSeedAndStep) {
  TrainConfig t;
  t.tgt_len = 16;
  t.tgt_len_max = 24;
  std::set<int64_t> seen;
  for (int64_t step = 1; step <= 2000; ++step) {
    const int64_t len = segment_length(t, step);
    ASSERT_GE(len, 16);
    ASSERT_LE(len, 24);
    seen.insert(len);
    EXPECT_EQ(segment_length(t, step), len);  // a function of (seed, step) only
  }
  EXPECT_EQ(seen.size(), 9u);  // every length of the range occurs
  TrainConfig other = t;
  other.seed = t.seed + 1;
  int differ = 0;
  for (int64_t step = 1; step <= 100; ++step)
    differ += segment_length(other, step) != segment_length(t, step);
  EXPECT_GT(differ, 50);
  EXPECT_EQ(longest_segment(t), 24);
}

TEST(SegmentLength, VariableSegmentsTileEachStreamContiguously) {
  std::vector<int32_t> ids(2 * 101);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  StreamBatcher batcher(ids, /*batch_size=*/2, /*tgt_len=*/8);
  int64_t expected_start = 0;
  for (const int64_t len : {5, 9, 12, 3, 30, 30, 30}) {
    const auto s = batcher.next(len);
    EXPECT_EQ(s.starts_epoch, expected_start == 0);
    const int64_t got = s.inputs.size(1);
    EXPECT_EQ(got, std::min<int64_t>(len, 100 - expected_start));  // cut at the stream's end
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_EQ(s.inputs[b][0].item<int64_t>(), b * 101 + expected_start);
      EXPECT_EQ(s.targets[b][got - 1].item<int64_t>(), b * 101 + expected_start + got);
    }
    expected_start += got;
    if (expected_start >= 100) expected_start = 0;
  }
}

TEST(SegmentLength, ARunWithRandomLengthsTrainsAndRecordsTheRange) {
  const auto dir = testing::scratch_dir("random_lengths");
  const auto corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(200),
                            testing::tiny_english(30, 1), testing::tiny_english(30, 2));
  const auto run = dir + "/run";
  ASSERT_TRUE(
      testing::train_tiny_run(corpus, run, "rope", "char", 6, {"--set", "train.tgt_len_max=24"}));
  const auto config = nlohmann::json::parse(testing::read_text(run + "/config.json"));
  EXPECT_EQ(config["train"]["tgt_len_max"], 24);
  const auto bad = testing::run_txl({"train", "--config", run + ".config.json", "--run-dir",
                                     dir + "/bad", "--set", "train.tgt_len_max=8"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("train.tgt_len_max (8) must be 0 (fixed segments) or at least "
                         "train.tgt_len (16)"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad"));
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
