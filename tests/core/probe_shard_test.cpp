// Probes split across processes (probe_shard.h), in process: the shards' blocks follow the
// one-process passes and cover every window once; every registered probe finished from N
// shards' partials (sent through JSON text, as shard files carry them) equals the probe
// finished in one process, to the last bit, for N from 1 to more shards than windows; a
// missing or doubled shard is refused; the merge of shard files refuses files that are not
// one set of shards of one run, naming the file and what differs.
#include "txl/probe/probe_shard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "txl/data/vocab.h"
#include "txl/probe/probe.h"
#include "txl/probe/probe_scoring.h"
#include "txl/probe/probe_shard_file.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {
namespace {

TEST(ProbeShard, BlocksFollowTheOneProcessPassesAndCoverEveryWindowOnce) {
  // batch_tokens 40: windows of 11 tokens go 4 a pass, of 41 tokens 1 a pass, of 6 tokens 8.
  const std::vector<WindowGroup> groups = {{10, 11}, {3, 41}, {0, 5}, {17, 6}};
  for (const int64_t n : {1, 2, 3, 4, 7, 12, 40}) {
    SCOPED_TRACE(std::to_string(n) + " shards");
    std::vector<int64_t> next(groups.size(), 0);  // each group's next window not yet covered
    for (int64_t k = 0; k < n; ++k) {
      const auto blocks = shard_windows(groups, 40, {k, n});
      ASSERT_EQ(blocks.size(), groups.size());
      for (size_t g = 0; g < groups.size(); ++g) {
        const auto [first, end] = blocks[g];
        if (first == end) continue;
        EXPECT_EQ(first, next[g]) << "group " << g << ": shards in order, no gap, no overlap";
        EXPECT_EQ(first % windows_per_pass(40, groups[g].length), 0) << "a block starts a pass";
        next[g] = end;
      }
    }
    for (size_t g = 0; g < groups.size(); ++g) EXPECT_EQ(next[g], groups[g].windows);
  }
  EXPECT_EQ(probe_shard_block(10, {1, 3}), std::make_pair(int64_t{3}, int64_t{6}));
  EXPECT_THROW(parse_probe_shard("2/2", "--shard"), InputError);
  EXPECT_THROW(parse_probe_shard("0/4097", "--shard"), InputError);
  EXPECT_EQ(parse_probe_shard("3/4096", "--shard").index, 3);
}

// Small values for each probe on the split below, several passes per group at batch_tokens 40.
ProbeValues small_values(const Probe& probe, const ProbeSubject& subject) {
  ProbeValues v = probe.defaults(subject);
  v.seed = 5;
  const std::string name = probe.name;
  if (name == "copy") v.values = {{"span", {3}}, {"distances", {2, 9}}, {"count", {7}}};
  if (name == "passkey")
    v.values = {
        {"lengths", {12}}, {"depths", {0, 1}}, {"trials", {5}}, {"key_len", {2}}, {"cue_len", {2}}};
  if (name == "attention") v.values = {{"lengths", {8, 12}}, {"windows", {5}}};
  if (name == "recl")
    v.values = {{"first", {2}},   {"step", {3}},        {"last", {11}},
                {"targets", {9}}, {"ratios", {0.5, 1}}, {"threshold", {0.01}}};
  return v;
}

nlohmann::json as_json(const ProbeRun& run) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const auto& m : run.metrics) metrics.push_back(to_json(m));
  return {{"detail", run.detail}, {"metrics", metrics}};
}

// A tiny model on a random split of 13 tokens, eval.batch_tokens 40 (several passes a group).
struct TinySubject {
  TransformerLM model{nullptr};
  std::vector<int32_t> ids = testing::random_ids(300, 13);
  Vocab vocab;
  Config config;
  ProbeSubject subject;
  TinySubject() {
    torch::manual_seed(3);
    model = TransformerLM(testing::tiny_model(PosEncoding::kRelative), 13);
    std::vector<std::string> tokens = {kUnkToken};
    for (int i = 1; i < 13; ++i) tokens.push_back("w" + std::to_string(i));
    vocab = Vocab(TokenizerKind::kWord, tokens);
    config.train.tgt_len = 8;
    config.eval.batch_tokens = 40;
    subject = {&model, &ids, &vocab, &config, {8, 12}, Precision::kFp32};
  }
};

TEST(ProbeShard, EveryProbeMergedFromShardsEqualsOneProcessToTheLastBit) {
  TinySubject tiny;
  const ProbeSubject& subject = tiny.subject;
  for (const auto& probe : probe_registry()) {
    SCOPED_TRACE(probe.name);
    const ProbeValues values = small_values(probe, subject);
    probe.check(subject, values);
    const auto whole = as_json(probe.finish({probe.score(subject, values, {}, {})}, values));
    for (const int64_t n : {2, 3, 5, 60}) {  // 60: more shards than any group has windows
      SCOPED_TRACE(std::to_string(n) + " shards");
      std::vector<nlohmann::json> partials;
      for (int64_t k = 0; k < n; ++k) {
        const auto partial = probe.score(subject, values, {k, n}, {});
        partials.push_back(nlohmann::json::parse(partial.dump()));  // as a shard file reads
      }
      EXPECT_EQ(as_json(probe.finish(partials, values)), whole);
      // A shard left out or given twice is refused, never finished without it.
      size_t scored = 0;  // a shard that scored something
      while (partials[scored].at("pieces").empty()) ++scored;
      auto missing = partials;
      missing.erase(missing.begin() + long(scored));
      EXPECT_THROW(probe.finish(missing, values), InputError);
      auto doubled = partials;
      doubled.push_back(partials[scored]);
      EXPECT_THROW(probe.finish(doubled, values), InputError);
    }
  }
}

// Shard files of the copy probe (and attention beside it where `with_attention`), as
// txl eval --shard writes them, with the run identity and settings given.
std::string write_shard(const std::string& path, const TinySubject& tiny, ProbeValues values,
                        const ProbeShard& shard, const nlohmann::json& run,
                        bool with_attention = false) {
  std::vector<ProbePartial> partials;
  for (const std::string name : {"copy", "attention"}) {
    if (name == "attention" && !with_attention) continue;
    const Probe& probe = find_probe(name, "test");
    const ProbeValues v = name == "copy" ? values : small_values(probe, tiny.subject);
    partials.push_back({name, v, probe.score(tiny.subject, v, shard, {}), 0.5});
  }
  std::ofstream(path) << shard_file_json(shard, run, {{"lengths", {8}}}, partials).dump(2);
  return path;
}

// The InputError's message of merging `paths`; "" when the merge succeeds.
std::string merge_error(const std::vector<std::string>& paths) {
  try {
    std::vector<ShardFile> files;
    for (const auto& p : paths) files.push_back(read_shard_file(p));
    merge_probe_shards(files);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ProbeShardFile, MergeRefusesFilesThatAreNotOneSetOfShardsOfOneRun) {
  TinySubject tiny;
  const std::string dir = ::testing::TempDir() + "/txl_probe_shard_files";
  std::filesystem::create_directories(dir);
  const Probe& copy = find_probe("copy", "test");
  const ProbeValues v = small_values(copy, tiny.subject);
  const nlohmann::json run = {{"dir", "runs/r"}, {"checkpoint_checksum", "00ff"}};
  const auto s0 = write_shard(dir + "/s0.json", tiny, v, {0, 2}, run);
  const auto s1 = write_shard(dir + "/s1.json", tiny, v, {1, 2}, run);
  ProbeValues seeded = v, counted = v;
  seeded.seed = 9;
  counted.values["count"] = {8};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{s0, write_shard(dir + "/other.json", tiny, v, {1, 2},
                        {{"dir", "runs/r"}, {"checkpoint_checksum", "0100"}})},
       "run.checkpoint_checksum is \"0100\" in " + dir + "/other.json but \"00ff\" in " + s0},
      {{s0, write_shard(dir + "/seed.json", tiny, seeded, {1, 2}, run)},
       "copy.seed is 9 in " + dir + "/seed.json but 5 in " + s0},
      {{s0, write_shard(dir + "/count.json", tiny, counted, {1, 2}, run)},
       "copy.count is [8] in " + dir + "/count.json but [7] in " + s0},
      {{s0, write_shard(dir + "/of3.json", tiny, v, {1, 3}, run)},
       dir + "/of3.json is shard 1/3 but " + s0 + " is shard 0/2"},
      {{s0, write_shard(dir + "/more.json", tiny, v, {1, 2}, run, true)},
       "--probes copy,attention in " + dir + "/more.json but copy in " + s0},
      {{s0}, "1 of the 2 shards missing (1/2)"},
      {{s1, s0, s1}, "are both shard 1/2"},
  };
  for (const auto& [paths, needle] : cases) {
    const std::string error = merge_error(paths);
    EXPECT_NE(error.find(needle), std::string::npos) << needle << "\n" << error;
  }
  // Not a shard file, or one edited after it was written (its digest no longer matches).
  std::ofstream(dir + "/plain.json") << R"({"run": "runs/r", "probes": {}})";
  EXPECT_NE(merge_error({s0, dir + "/plain.json"}).find("is not a probe shard file"),
            std::string::npos);
  auto edited = read_json_file(s1);
  edited["probes"][0]["seconds"] = 7;
  std::ofstream(dir + "/edited.json") << edited.dump();
  EXPECT_NE(merge_error({s0, dir + "/edited.json"}).find("edited or damaged"), std::string::npos);
  // The run's directory as another process named it (another machine, `./r`) is the same run.
  const auto moved =
      write_shard(dir + "/moved.json", tiny, v, {1, 2},
                  {{"dir", "/mnt/elsewhere/runs/r"}, {"checkpoint_checksum", "00ff"}});
  EXPECT_EQ(merge_error({s0, moved}), "");
  // In any order, one full set merges into the one-process output.
  std::vector<ShardFile> files = {read_shard_file(s1), read_shard_file(s0)};
  const auto merged = merge_probe_shards(files);
  ASSERT_EQ(merged.outputs.size(), 1u);
  const auto whole = copy.finish({copy.score(tiny.subject, v, {}, {})}, v);
  EXPECT_EQ(as_json(merged.outputs[0].run), as_json(whole));
  EXPECT_EQ(merged.outputs[0].seconds, 1.0) << "the shards' seconds added";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace txl
