// One decision for "does this training fit in memory" (issue 54, causes 8, 9 and 11), through
// the real executable:
//  - TXL_MEMORY_LIMIT_MB is the whole process's size (a container's), so a dry run under a
//    limit below what LibTorch alone holds does not fit;
//  - a killed run whose measured footprint is most of the limit is diagnosed as killed for
//    memory; a study's --jobs N admits N cells only if N of their measured footprints fit;
//  - --dry-run writes nothing (the token cache included) and refuses, as txl train does and
//    naming train.tgt_len_max, a segment longer than the training streams.
#include <gtest/gtest.h>

#include "cli_harness.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;
using testing::run_txl;
using testing::write_config;

// LibTorch alone holds more than this (about 180 MB resident on Debian 12 and 13), so no
// process fits in it; and two tiny runs' processes do not fit in kTwoDoNotFit MiB, where one
// does.
constexpr const char* kBelowLibTorch = "TXL_MEMORY_LIMIT_MB=100";
constexpr const char* kOneFits = "TXL_MEMORY_LIMIT_MB=300";

struct Fixture {
  std::string dir, corpus, config;
};

Fixture tiny(const std::string& name, int steps = 2) {
  Fixture f;
  f.dir = fresh_dir(name);
  f.corpus = testing::write_tiny_corpus(f.dir + "/corpus");
  json config = testing::tiny_config(f.corpus);
  config["train"]["max_steps"] = steps;
  f.config = write_config(f.dir + "/c.json", config);
  return f;
}

TEST(FootprintCli, ADryRunUnderALimitBelowWhatTheProcessHoldsDoesNotFit) {
  const Fixture f = tiny("footprint_dry_limit");
  const auto r =
      run_txl({"train", "--config", f.config, "--dry-run", "--vocab-size", "30"}, {kBelowLibTorch});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.out.find("does NOT fit"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(": fits"), std::string::npos) << r.out;
  // With the corpus, its read is refused first, naming the file.
  for (const bool dry : {true, false}) {
    std::vector<std::string> args = {"train", "--config", f.config};
    args.push_back(dry ? "--dry-run" : "--run-dir");
    if (!dry) args.push_back(f.dir + "/run");
    const auto refused = run_txl(args, {kBelowLibTorch});
    EXPECT_EQ(refused.code, 2) << refused.output;
    EXPECT_NE(refused.err.find(f.corpus + "/train.txt: reading its"), std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("of memory is available"), std::string::npos) << refused.err;
  }
  EXPECT_FALSE(fs::exists(f.dir + "/run"));
}

TEST(FootprintCli, ADryRunWritesNoTokenCache) {
  const Fixture f = tiny("footprint_dry_cache");
  const std::string cache = f.dir + "/cache";
  const auto r = run_txl({"train", "--config", f.config, "--dry-run"}, {"TXL_CACHE_DIR=" + cache});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.out.find(": fits"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(cache)) << "a dry run wrote the token cache";
}

TEST(FootprintCli, ASegmentLongerThanTheStreamsIsRefusedByDryRunAsByTrainNamingItsKey) {
  const Fixture f = tiny("footprint_dry_streams");
  const std::string expected = "train.tgt_len_max (2000) is longer than a training stream";
  for (const bool dry : {true, false}) {
    std::vector<std::string> args = {"train", "--config", f.config, "--set",
                                     "train.tgt_len_max=2000"};
    if (dry) args.push_back("--dry-run");
    if (!dry) args.insert(args.end(), {"--run-dir", f.dir + "/run"});
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("lower train.tgt_len_max"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(f.dir + "/run"));
}

// A run directory as the kernel's out-of-memory killer leaves it: config.json and vocab.json,
// no checkpoint.
TEST(FootprintCli, AKilledRunWhoseMeasuredFootprintIsMostOfTheLimitIsDiagnosedAsOutOfMemory) {
  const Fixture f = tiny("footprint_dead_run");
  const std::string run = f.dir + "/run";
  ASSERT_EQ(run_txl({"train", "--config", f.config, "--run-dir", run}).code, 0);
  fs::remove(run + "/checkpoint.pt");
  fs::remove(run + "/best.pt");
  const std::vector<std::string> args = {"train", "--config", f.config, "--run-dir", run};
  const auto near = run_txl(args, {kOneFits});
  EXPECT_EQ(near.code, 2) << near.output;
  EXPECT_NE(near.err.find("stopped before its first checkpoint"), std::string::npos) << near.err;
  EXPECT_NE(near.err.find("out-of-memory killer most likely stopped it"), std::string::npos)
      << near.err;
  const auto roomy = run_txl(args);
  EXPECT_EQ(roomy.code, 2) << roomy.output;
  EXPECT_EQ(roomy.err.find("out-of-memory"), std::string::npos) << roomy.err;
}

TEST(FootprintCli, StudyJobsAdmitOnlyAsManyCellsAsFitTogether) {
  const Fixture f = tiny("footprint_study_jobs", 2);
  const json study = {{"base", json::parse(testing::read_text(f.config))},
                      {"grid", {{"model.pos_encoding", {"relative"}}, {"train.seed", {1, 2}}}},
                      {"eval", {{"methods", {"nonoverlap"}}, {"lengths", {8}}}}};
  const std::string spec = write_config(f.dir + "/study.json", study);
  const std::string out = f.dir + "/out";
  const auto two = run_txl({"study", "--config", spec, "--out", out, "--jobs", "2"}, {kOneFits});
  EXPECT_EQ(two.code, 2) << two.output;
  EXPECT_NE(two.err.find("with --jobs 2: 2 processes training at once need about"),
            std::string::npos)
      << two.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace txl
