// txl eval --text (issue 57, item 1): a user's own files scored with the run's tokenizer, each
// on its own and in total; the cache knows a text by its content, not its name; <unk>s are
// counted and warned of; every bad file is refused with exit 2, naming it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_harness.h"
#include "tiny_runs.h"

namespace txl {
namespace {

using testing::read_text;
using testing::run_txl;

std::string put(const std::string& path, const std::string& text) {
  testing::write_text(path, text);
  return path;
}

TEST(EvalText, FilesAreScoredEachOnItsOwnAndInTotal) {
  const std::string dir = testing::fresh_dir("eval_text");
  const std::string run = testing::copy_run(testing::tiny_run("relative"), dir + "/run");
  const std::string a = put(dir + "/a.txt", testing::tiny_english(6, 7)),
                    b = put(dir + "/b.txt", "the lord said qqq zzz\n");
  auto r = run_txl({"eval", "--run", run, "--text", a, "--text", b, "--lengths", "8,16", "--json",
                    dir + "/out.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_text(dir + "/out.json"));
  EXPECT_EQ(j.at("split"), "text");
  ASSERT_EQ(j.at("texts").size(), 2u);
  EXPECT_EQ(j.at("texts")[1].at("unknown"), 6);  // q, q, q, z, z, z
  for (size_t i = 0; i < 2; ++i) {
    const auto& total = j.at("results")[i];
    int64_t tokens = 0;
    double nll = 0;
    for (const auto& doc : j.at("texts")) {
      tokens += doc.at("results")[i].at("tokens").get<int64_t>();
      nll += doc.at("results")[i].at("nll_sum").get<double>();
    }
    EXPECT_EQ(total.at("tokens").get<int64_t>(), tokens);  // no window crosses the files
    EXPECT_NEAR(total.at("nll_sum").get<double>(), nll, 1e-9 * std::abs(nll));
  }
  EXPECT_NE(r.err.find("warning: " + b + ": 27.3% of its tokens (6 of 22)"), std::string::npos)
      << r.err;
  // The same text under another name is the same cache entry.
  const std::string renamed = put(dir + "/renamed.txt", read_text(a));
  r = run_txl({"eval", "--run", run, "--text", renamed, "--lengths", "8"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("(cached)"), std::string::npos) << r.output;
}

// --per-token: one row per scored token in text order, whatever the protocol's order of work;
// the rows' NLL adds up to the reported total at every length.
TEST(EvalText, PerTokenRowsAddUpToTheTotalInTextOrder) {
  const std::string run = testing::tiny_run("relative");
  const std::string dir = testing::fresh_dir("eval_text_tokens");
  const std::string a = put(dir + "/a.txt", testing::tiny_english(8, 3));
  for (const std::string method : {"nonoverlap", "sliding", "memory"}) {
    SCOPED_TRACE(method);
    const std::string rows_path = dir + "/" + method + ".tsv", json = dir + "/" + method + ".json";
    const auto r = run_txl({"eval", "--run", run, "--text", a, "--lengths", "8,32", "--method",
                            method, "--per-token", rows_path, "--json", json});
    ASSERT_EQ(r.code, 0) << r.output;
    const auto j = nlohmann::json::parse(read_text(json));
    std::istringstream in(read_text(rows_path));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line,
              "length\tdocument\tindex\ttoken\tid\tnll\tbits\tcontext\tunk\tword_index\tword\t"
              "word_nll");
    std::map<int64_t, double> sums;
    std::map<int64_t, int64_t> counts, last_index;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::istringstream fields(line);
      for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
      if (f.size() == 11) f.push_back("");  // getline drops a last empty field
      ASSERT_EQ(f.size(), 12u) << line;
      const int64_t length = std::stoll(f[0]), index = std::stoll(f[2]);
      EXPECT_GT(index, last_index[length]) << "rows out of text order: " << line;
      EXPECT_LT(std::stoll(f[7]), index) << "conditioned on more tokens than precede it";
      last_index[length] = index;
      sums[length] += std::stod(f[5]);
      counts[length] += 1;
    }
    for (const auto& result : j.at("results")) {
      const int64_t length = result.at("length");
      EXPECT_EQ(counts[length], result.at("tokens").get<int64_t>());
      EXPECT_NEAR(sums[length], result.at("nll_sum").get<double>(), 1e-6 * sums[length]);
    }
  }
  const auto bad = run_txl({"eval", "--run", run, "--text", a, "--per-token", dir + "/rows.csv"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("expected a file name ending in .tsv or .jsonl"), std::string::npos);
}

TEST(EvalText, BadFilesAreRefusedNamingThem) {
  const std::string run = testing::tiny_run("relative");
  const std::string dir = testing::fresh_dir("eval_text_bad");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--text", dir + "/missing.txt"}, "missing.txt: no such file"},
      {{"--text", dir}, "is a directory"},
      {{"--text", dir + "/fifo"}, "is a FIFO"},
      {{"--text", put(dir + "/empty.txt", "")}, "empty.txt: is empty"},
      {{"--text", put(dir + "/bad.txt", "\xff\xfe la\n")}, "bad.txt: invalid UTF-8"},
      {{"--text", put(dir + "/one.txt", "a")}, "one.txt: 1 char token(s)"},
      {{"--text", dir + "/one.txt", "--split", "valid"}, "give one"},
      {{"--text", "-", "--text", "-"}, "can be given once"},
  };
  for (const auto& [args, needle] : cases) {
    std::vector<std::string> all = {"eval", "--run", run, "--lengths", "8"};
    all.insert(all.end(), args.begin(), args.end());
    const auto r = run_txl(all);
    EXPECT_EQ(r.code, 2) << needle << "\n" << r.output;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace txl
