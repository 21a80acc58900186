// txl compare --text and the probes on --text files (issue 57, item 1): the runs score the
// user's files side by side, each file on its own and the total paired over the same windows,
// with the same per-file scoring (and the same numbers) as txl eval --text; every bad file or
// option is refused with exit 2 naming it, before anything is written. The probes read the
// files joined in order.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_runs.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;

std::string put(const std::string& path, const std::string& text) {
  testing::write_text(path, text);
  return path;
}

TEST(CompareText, RunsScoreTheFilesSideBySideAsEvalScoresThem) {
  const auto t = testing::copied_runs("compare_text");
  const std::string a = put(t.dir + "/a.txt", testing::tiny_english(6, 7)),
                    b = put(t.dir + "/b.txt", "the lord said unto them\n");
  const auto c = run_txl({"compare", t.rel, t.abs, "--text", a, "--text", b, "--lengths", "8,16",
                          "--json", t.dir + "/cmp.json"});
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.out.find("per file (each scored on its own"), std::string::npos) << c.out;
  const auto j = nlohmann::json::parse(read_text(t.dir + "/cmp.json"));
  EXPECT_EQ(j.at("split"), "text");
  ASSERT_EQ(j.at("texts").size(), 2u);
  ASSERT_EQ(j.at("paired").at("rows").size(), 2u) << "the totals are paired window by window";
  for (size_t r = 0; r < 2; ++r) {
    for (size_t i = 0; i < 2; ++i) {
      const auto& total = j.at("runs")[r].at("results")[i];
      int64_t tokens = 0;
      double nll = 0;
      for (const auto& file : j.at("texts")) {
        const auto& own = file.at("runs")[r].at("results")[i];
        EXPECT_EQ(own.at("length"), total.at("length"));
        tokens += own.at("tokens").get<int64_t>();
        nll += own.at("nll_sum").get<double>();
      }
      EXPECT_EQ(total.at("tokens").get<int64_t>(), tokens) << "no window crosses the files";
      EXPECT_NEAR(total.at("nll_sum").get<double>(), nll, 1e-9 * nll);
    }
  }
  // txl eval scores the files the same way: the same numbers, evaluated again.
  for (size_t r = 0; r < 2; ++r) {
    const std::string run = r == 0 ? t.rel : t.abs, json = t.dir + "/eval.json";
    const auto e = run_txl({"eval", "--run", run, "--text", a, "--text", b, "--lengths", "8,16",
                            "--no-cache", "--json", json});
    ASSERT_EQ(e.code, 0) << e.output;
    const auto ej = nlohmann::json::parse(read_text(json));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(ej.at("results")[i].at("nll_sum"), j.at("runs")[r].at("results")[i].at("nll_sum"));
      EXPECT_EQ(ej.at("texts")[1].at("results")[i].at("nll_sum"),
                j.at("texts")[1].at("runs")[r].at("results")[i].at("nll_sum"));
    }
  }
}

TEST(CompareText, BadFilesAndOptionsAreRefusedNamingThemAndWriteNothing) {
  const auto t = testing::copied_runs("compare_text_bad");
  const std::string word = testing::tiny_run("relative", "word");
  const std::string dir = t.dir, json = t.dir + "/out.json";
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  const std::string good = put(dir + "/good.txt", testing::tiny_english(3));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--text", dir + "/missing.txt"}, "missing.txt: no such file"},
      {{"--text", dir}, "is a directory"},
      {{"--text", dir + "/fifo"}, "is a FIFO"},
      {{"--text", put(dir + "/empty.txt", "")}, "empty.txt: is empty"},
      {{"--text", put(dir + "/bad.txt", "\xff\xfe la\n")}, "bad.txt: invalid UTF-8"},
      {{"--text", put(dir + "/one.txt", "a")}, "one.txt: 1 char token(s)"},
      {{"--text", good, "--split", "valid"}, "give one"},
      {{"--text", "-", "--text", "-"}, "can be given once"},
  };
  // (txl eval's own: EvalText.BadFilesAreRefusedNamingThem.)
  for (const auto& [args, needle] : cases) {
    std::vector<std::string> all = {"compare", t.rel, t.abs, "--lengths", "8", "--json", json};
    all.insert(all.end(), args.begin(), args.end());
    const auto r = run_txl(all);
    EXPECT_EQ(r.code, 2) << needle << "\n" << r.output;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(json)) << r.err;
  }
  // Runs of other tokenizers: refused as on a split, naming both.
  const auto r = run_txl({"compare", t.rel, word, "--text", good, "--json", json});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("different tokenizers"), std::string::npos) << r.err;
  // A probe shard scores the run's split.
  const auto shard = run_txl({"eval", "--run", t.rel, "--text", good, "--probes", "copy", "--shard",
                              "0/2", "--json", json});
  EXPECT_EQ(shard.code, 2) << shard.output;
  EXPECT_NE(shard.err.find("leave --shard out"), std::string::npos) << shard.err;
  EXPECT_FALSE(fs::exists(json));
  EXPECT_FALSE(fs::exists(t.rel + "/eval-cache")) << "a refusal evaluated nothing";
  EXPECT_FALSE(fs::exists(t.abs + "/eval-cache"));
}

// The probes build their instances from the files joined in order: a copy span too long for
// them is refused with their joined length, and one that fits runs in eval and compare.
TEST(ProbesOnText, ProbesReadTheFilesJoinedInOrder) {
  const auto t = testing::shared_runs("probes_text");
  const std::string a = put(t.dir + "/a.txt", testing::tiny_english(5, 3)),
                    b = put(t.dir + "/b.txt", testing::tiny_english(4, 9));
  const size_t joined = read_text(a).size() + read_text(b).size();  // ASCII: a char a byte
  const std::vector<std::string> copy = {"--probes",    "copy",           "--probe-set",
                                         "copy.span=4", "--probe-set",    "copy.count=4",
                                         "--probe-set", "copy.distances="};
  auto args = [&](std::vector<std::string> head, int64_t distance) {
    head.insert(head.end(), {"--text", a, "--text", b, "--lengths", "8"});
    head.insert(head.end(), copy.begin(), copy.end());
    head.back() += std::to_string(distance);
    head.insert(head.end(), {"--json", t.dir + "/out.json"});
    return head;
  };
  const auto refused = run_txl(args({"eval", "--run", t.rel}, static_cast<int64_t>(joined)));
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.err.find("which has " + std::to_string(joined)), std::string::npos)
      << refused.err;
  const auto e = run_txl(args({"eval", "--run", t.rel}, static_cast<int64_t>(joined) - 16));
  ASSERT_EQ(e.code, 0) << e.output;
  EXPECT_EQ(nlohmann::json::parse(read_text(t.dir + "/out.json")).at("probes").size(), 1u);
  const auto c = run_txl(args({"compare", t.rel, t.abs}, 8));
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_EQ(nlohmann::json::parse(read_text(t.dir + "/out.json")).at("probe_runs").size(), 2u);
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
