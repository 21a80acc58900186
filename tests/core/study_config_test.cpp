// Study configs: cells and names from the grid, protocols from the eval block, manifests and
// what a re-run may change, and a table of bad configs, each refused naming the key.
#include "txl/study/study_config.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "txl/eval/protocols/memory.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using nlohmann::json;

json base_config() {
  return {{"data", {{"dir", "corpus"}}},
          {"model", {{"n_layer", 1}, {"d_model", 16}, {"n_head", 2}, {"d_head", 8}}},
          {"train", {{"tgt_len", 8}, {"mem_len", 8}, {"max_steps", 10}}},
          {"eval", {{"lengths", {8, 16}}}}};
}

json study(json grid, json eval = json::object()) {
  return {{"base", base_config()}, {"grid", grid}, {"eval", eval}};
}

TEST(StudyConfig, CellsNamedFromTheGridEncodingFirstSeedLast) {
  const StudySpec s = study_from_json(study({{"train.seed", {1, 2}},
                                             {"train.tgt_len", {8, 12}},
                                             {"model.pos_encoding", {"rope", "absolute"}}}),
                                      "s.json");
  std::vector<std::string> names;
  for (const auto& c : s.cells) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "rope-tgt_len8-seed1", "rope-tgt_len8-seed2", "rope-tgt_len12-seed1",
                       "rope-tgt_len12-seed2", "absolute-tgt_len8-seed1", "absolute-tgt_len8-seed2",
                       "absolute-tgt_len12-seed1", "absolute-tgt_len12-seed2"}));
  EXPECT_EQ(s.groups, (std::vector<std::string>{"rope-tgt_len8", "rope-tgt_len12",
                                                "absolute-tgt_len8", "absolute-tgt_len12"}));
  EXPECT_EQ(s.cells[2].config.train.tgt_len, 12);
  EXPECT_EQ(s.cells[1].config.train.seed, 2);
  // rope keeps the base's memory; absolute has none, so its cells train without.
  EXPECT_EQ(s.cells[0].config.train.mem_len, 8);
  EXPECT_EQ(s.cells[4].config.train.mem_len, 0);
  EXPECT_EQ(s.cells[4].overrides.back(), "train.mem_len=0");
  EXPECT_EQ(s.eval.lengths, (std::vector<int64_t>{8, 16}));  // from the base's eval.lengths
}

TEST(StudyConfig, ProtocolsAreMethodsTimesAidsAndMemoryLengths) {
  const StudySpec s = study_from_json(study({{"model.pos_encoding", {"rope"}}, {"train.seed", {1}}},
                                            {{"methods", {"nonoverlap", "memory"}},
                                             {"mem_lens", {0, 16}},
                                             {"aids", {"none", "ntk:4"}}}),
                                      "s.json");
  std::vector<std::string> labels;
  for (const auto& p : s.protocols) labels.push_back(p.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"nonoverlap", "memory mem0", "memory mem16",
                                              "nonoverlap+ntk:4", "memory mem0+ntk:4",
                                              "memory mem16+ntk:4"}));
  EXPECT_EQ(s.protocols[3].settings.aid, ExtrapolationAid::kNtk);
  EXPECT_DOUBLE_EQ(s.protocols[3].settings.aid_factor, 4.0);
  EXPECT_EQ(s.protocols[2].settings.protocol_settings.get(memory_setting::kMemLen), 16);
}

TEST(StudyConfig, ARerunMayAddGridValuesOnly) {
  const json grid = {{"model.pos_encoding", {"relative", "rope"}}, {"train.seed", {1, 2}}};
  const json saved = study_manifest(study_from_json(study(grid), "s.json"));
  json more = grid;
  more["train.seed"].push_back(3);
  EXPECT_TRUE(
      study_differences(saved, study_manifest(study_from_json(study(more), "s.json"))).empty());
  json fewer = grid;
  fewer["model.pos_encoding"] = {"relative"};
  const auto d1 = study_differences(saved, study_manifest(study_from_json(study(fewer), "s.json")));
  ASSERT_EQ(d1.size(), 1u);
  EXPECT_NE(d1[0].find("no longer lists \"rope\""), std::string::npos) << d1[0];
  const auto d2 = study_differences(
      saved, study_manifest(study_from_json(study(grid, {{"lengths", {8, 32}}}), "s.json")));
  ASSERT_EQ(d2.size(), 1u);
  EXPECT_NE(d2[0].find("eval.lengths: [8,16] vs [8,32]"), std::string::npos) << d2[0];
  json other = study(grid);
  other["base"]["train"]["max_steps"] = 20;
  const auto d3 = study_differences(saved, study_manifest(study_from_json(other, "s.json")));
  ASSERT_EQ(d3.size(), 1u);
  EXPECT_NE(d3[0].find("train.max_steps: 10 vs 20"), std::string::npos) << d3[0];
  // Threads are how the machine runs it, not what is studied.
  EXPECT_TRUE(study_differences(
                  saved, study_manifest(study_from_json(study(grid), "s.json", /*threads=*/3)))
                  .empty());
}

TEST(StudyConfig, BadConfigsNameTheKey) {
  const json ok_grid = {{"model.pos_encoding", {"relative"}}, {"train.seed", {1}}};
  struct Case {
    json config;
    std::string expected;
  };
  json unknown_top = study(ok_grid);
  unknown_top["grids"] = 1;
  json no_base = study(ok_grid);
  no_base.erase("base");
  json bad_baseline = study(ok_grid);
  bad_baseline["baseline"] = "rope";
  const std::vector<Case> cases = {
      {unknown_top, "unknown key \"grids\""},
      {no_base, "\"base\" is missing"},
      {study({{"model.pos_encoding", {"relative"}}}), "needs \"train.seed\""},
      {study({{"train.seed", {1}}}), "needs \"model.pos_encoding\""},
      {study({{"model.pos_encoding", json::array()}, {"train.seed", {1}}}), "is an empty list"},
      {study({{"model.pos_encoding", {"rope", "rope"}}, {"train.seed", {1}}}),
       "lists \"rope\" twice"},
      {study({{"model.pos_encoding", "rope"}, {"train.seed", {1}}}), "must be a list"},
      {study({{"model.pos_encoding", {"relative"}}, {"train.seed", {1.5}}}), "must be an integer"},
      {study({{"model.pos_encoding", {"relative"}}, {"train.seed", {1}}, {"model.n_layers", {2}}}),
       "grid[\"model.n_layers\"]"},
      {study({{"model.pos_encoding", {"relative"}}, {"train.seed", {1}}, {"trian.seed", {2}}}),
       "unknown section \"trian\""},
      {study({{"model.pos_encoding", {"relativ"}}, {"train.seed", {1}}}), "relativ"},
      {study({{"model.pos_encoding", {"relative"}}, {"train.seed", {1}}, {"model.d_model", {20}}}),
       "cell relative-d_model20-seed1"},
      {study(ok_grid, {{"method", {"sliding"}}}), "unknown key \"method\""},
      {study(ok_grid, {{"methods", {"slide"}}}), "eval.methods"},
      {study(ok_grid, {{"lengths", {0}}}), "eval.lengths: 0 is not a positive length"},
      {study(ok_grid, {{"aids", {"ntk:0.5"}}}), "ntk:0.5"},
      {study(ok_grid, {{"aids", {"yarnn"}}}), "yarnn"},
      {study(ok_grid, {{"split", "train"}}), "eval.split: \"train\" is not valid"},
      {study(ok_grid, {{"checkpoint", "first"}}), "eval.checkpoint: \"first\" is not valid"},
      {bad_baseline, "baseline \"rope\" is not an encoding of the grid"},
      {study(ok_grid, {{"methods", {"sliding"}}, {"stride", 12}, {"lengths", {8, 16}}}),
       "eval.stride 12 is longer than the window length 8"},
      // A method's setting without the method would be ignored in silence.
      {study(ok_grid, {{"stride", 4}}),
       "eval.stride is a setting of the sliding method, which the methods (nonoverlap) do "
       "not list"},
      {study(ok_grid, {{"methods", {"nonoverlap", "sliding"}}, {"mem_lens", {0}}}),
       "eval.mem_lens is a setting of the memory method"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.config.dump());
    testing::expect_input_error([&] { study_from_json(c.config, "bad.json"); },
                                {c.expected, "bad.json"});
  }
}

// The study configs that ship (their base paths are relative to the repository root, where
// the README runs them).
TEST(StudyConfig, ShippedStudiesParse) {
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(TXL_SOURCE_DIR);
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs/studies")) {
    if (entry.path().extension() != ".json") continue;
    ++seen;
    EXPECT_NO_THROW({
      const StudySpec s = read_study(entry.path().string());
      EXPECT_GE(s.cells.size(), 6u) << entry.path();
      EXPECT_GE(s.groups.size(), 2u) << entry.path();
    }) << entry.path();
  }
  std::filesystem::current_path(cwd);
  EXPECT_GE(seen, 2u);
}

}  // namespace
}  // namespace txl
