// Probes split across processes through the real CLI (txl eval --shard K/N, txl eval --merge):
// every probe merged from 1, 2 and 3 shards (3: more shards than the attention probe has
// windows) equals one process's JSON exactly; the merge refuses shards that are not one set,
// with exit 2, and never touches --json then; --shard refuses what makes no sense, before
// anything is written. The shard arithmetic and every refusal of the merge in detail:
// probe_shard_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_runs.h"
#include "txl/probe/probe.h"
#include "txl/util/text.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(ProbeShardCli, EveryProbeMergedFromShardsEqualsOneProcess) {
  const auto t = testing::shared_runs("shards");
  const std::string dir = t.dir;
  const auto base = with({"eval", "--run", t.rel, "--lengths", "16", "--probe-seed", "3"},
                         testing::small_probes());
  const auto one = run_txl(with(base, {"--json", dir + "/one.json"}));
  ASSERT_EQ(one.code, 0) << one.err;
  const auto expected = nlohmann::json::parse(read_text(dir + "/one.json"))["probes"];
  for (const int n : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(n) + " shards");
    std::vector<std::string> merge = {"eval", "--merge"};
    for (int k = 0; k < n; ++k) {
      const std::string file =
          dir + "/s" + std::to_string(k) + "-of-" + std::to_string(n) + ".json";
      const auto r = run_txl(
          with(base, {"--shard", std::to_string(k) + "/" + std::to_string(n), "--json", file}));
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_NE(r.out.find("No perplexity table"), std::string::npos) << r.out;
      merge.push_back(file);
    }
    const std::string out = dir + "/merged-" + std::to_string(n) + ".json";
    const auto r = run_txl(with(merge, {"--json", out}));
    ASSERT_EQ(r.code, 0) << r.err;
    const auto merged = nlohmann::json::parse(read_text(out))["probes"];
    ASSERT_EQ(merged.size(), expected.size());
    for (const auto& probe : probe_registry()) {
      SCOPED_TRACE(probe.name);
      EXPECT_EQ(merged[probe.name]["detail"], expected[probe.name]["detail"]);
      EXPECT_EQ(merged[probe.name]["metrics"], expected[probe.name]["metrics"]);
      EXPECT_EQ(merged[probe.name]["options"], expected[probe.name]["options"]);
      EXPECT_NE(r.out.find(std::string("probe ") + probe.name + " ("), std::string::npos) << r.out;
    }
    EXPECT_NE(r.out.find("RECL (tokens) [this run alone]"), std::string::npos) << r.out;
  }
  testing::cleanup_scratch();
}

// The exit status, the message and the untouched --json through the CLI; every kind of file
// the merge refuses is in probe_shard_test.cpp (in process, no model loaded per case).
TEST(ProbeShardCli, MergeRefusesShardsThatDoNotBelongTogetherAndKeepsTheOutput) {
  const auto t = testing::shared_runs("refusals");
  const std::string dir = t.dir;
  std::vector<std::string> shards;
  for (const std::string k : {"0", "1"}) {
    shards.push_back(dir + "/s" + k + ".json");
    const auto r = run_txl({"eval", "--run", t.rel, "--lengths", "16", "--probes", "copy",
                            "--probe-set", "copy.distances=4", "--probe-set", "copy.count=4",
                            "--json", shards.back(), "--shard", k + "/2"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const auto& s0 = shards[0];
  const auto& s1 = shards[1];
  const std::string plain = dir + "/plain.json";  // an eval's JSON, not a shard's
  testing::write_text(plain, R"({"run": "runs/r", "results": []})");
  const std::string out = dir + "/out.json";
  testing::write_text(out, "kept");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{s0, "--json", out}, "1 of the 2 shards missing (1/2)"},
      {{s0, s0, s1, "--json", out}, "are both shard 0/2"},
      {{s0, plain, "--json", out}, plain + " is not a probe shard file"},
      {{s0, s1, "--json", out, "--run", t.rel}, "--merge takes the shard files' run"},
      {{s0, s1, "--json", out, "--probes", "copy"}, "--probes is not taken with --merge"},
      {{s0, s1, "--json", s0}, "--json " + s0 + " is one of the --merge files"},
  };
  for (const auto& [extra, needle] : cases) {
    const auto r = run_txl(with({"eval", "--merge"}, extra));
    EXPECT_EQ(r.code, 2) << join(extra, " ") << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << needle << "\n" << r.err;
    EXPECT_EQ(read_text(out), "kept") << join(extra, " ");
  }
  // In any order, the full set merges and replaces the file.
  const auto r = run_txl({"eval", "--merge", s1, s0, "--json", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_text(out))["probes"]["copy"]["options"]["count"],
            nlohmann::json::array({4}));
  testing::cleanup_scratch();
}

TEST(ProbeShardCli, ShardRefusesWhatMakesNoSenseBeforeWritingAnything) {
  const auto t = testing::shared_runs("shard_refusals");
  const std::string json = t.dir + "/never.json";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--shard", "0/2", "--json", json}, "but no --probes is given"},
      {{"--shard", "0/2", "--probes", "copy"}, "--shard 0/2 needs --json FILE"},
      {{"--shard", "0/2", "--probes", "copy", "--aid", "yarn", "--json", json},
       "but --aid yarn applies one"},
      {{"--shard", "2/2", "--probes", "copy", "--json", json}, "--shard \"2/2\" is not valid"},
      {{"--shard", "0/2", "--probes", "copy", "--per-position", "--json", json},
       "--per-position shapes the perplexity table"},
  };

  for (const auto& [extra, needle] : cases) {
    const auto r = run_txl(with({"eval", "--run", t.rel, "--lengths", "16"}, extra));
    EXPECT_EQ(r.code, 2) << join(extra, " ") << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << join(extra, " ") << "\n" << r.err;
    EXPECT_FALSE(fs::exists(json)) << join(extra, " ");
  }
  const auto r = run_txl({"eval", "--lengths", "16"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("txl eval needs --run DIR"), std::string::npos) << r.err;
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
