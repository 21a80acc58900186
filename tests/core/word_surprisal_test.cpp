// txl eval --per-token's word columns (issue 57, item 2): every row names the word of the
// text its token belongs to; the word's surprisal (its tokens' summed NLL) stands on its last
// token's row, so the words add up to the total. Byte and subword runs split a word into
// several tokens; a word run's word is its token.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_harness.h"
#include "tiny_runs.h"
#include "txl/data/subword_model.h"

namespace txl {
namespace {

using testing::read_text;
using testing::run_txl;

// Double spaces, a line that starts with a space, an empty line; only characters the tiny
// runs' vocabularies hold (an <unk> is text of its own, token_words.h).
const char* kText = "the lord  said\n unto him.\n\nand they went into\nland.\n";

struct Row {
  int64_t length = 0, index = 0, word_index = 0;
  std::string word;
  double nll = 0;
  bool has_word_nll = false;
  double word_nll = 0;
};

std::vector<Row> read_rows(const std::string& path) {
  std::vector<Row> rows;
  std::istringstream in(read_text(path));
  std::string line;
  const bool tsv = path.size() > 4 && path.compare(path.size() - 4, 4, ".tsv") == 0;
  if (tsv) std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    Row r;
    if (tsv) {
      std::vector<std::string> f;
      std::istringstream fields(line);
      for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
      if (f.size() == 11) f.push_back("");  // getline drops a last empty field
      EXPECT_EQ(f.size(), 12u) << line;
      if (f.size() != 12u) continue;
      r = {std::stoll(f[0]),
           std::stoll(f[2]),
           std::stoll(f[9]),
           f[10],
           std::stod(f[5]),
           !f[11].empty(),
           f[11].empty() ? 0.0 : std::stod(f[11])};
    } else {
      const auto j = nlohmann::json::parse(line);
      r = {j.at("length"),
           j.at("index"),
           j.at("word_index"),
           j.at("word"),
           j.at("nll"),
           !j.at("word_nll").is_null(),
           j.at("word_nll").is_null() ? 0.0 : j.at("word_nll").get<double>()};
    }
    rows.push_back(r);
  }
  return rows;
}

std::vector<std::string> whitespace_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Scores kText with `run` into `rows_path` and checks the word columns against the text's
// whitespace-delimited words and the JSON's totals.
void expect_words_add_up(const std::string& run, const std::string& rows_path) {
  const std::string dir = testing::fresh_dir("word_surprisal");
  testing::write_text(dir + "/a.txt", kText);
  const auto r = run_txl({"eval", "--run", run, "--text", dir + "/a.txt", "--lengths", "8,16",
                          "--per-token", rows_path, "--json", dir + "/out.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rows = read_rows(rows_path);
  ASSERT_FALSE(rows.empty());
  const auto expected = whitespace_words(kText);
  std::map<int64_t, double> word_total;                          // per length
  std::map<std::pair<int64_t, int64_t>, double> running;         // (length, word) -> NLL so far
  std::map<std::pair<int64_t, int64_t>, int64_t> word_sum_rows;  // how many rows carry the sum
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    SCOPED_TRACE("length " + std::to_string(row.length) + " index " + std::to_string(row.index));
    ASSERT_LT(row.word_index, static_cast<int64_t>(expected.size()));
    EXPECT_EQ(row.word, expected[static_cast<size_t>(row.word_index)]);
    const auto key = std::make_pair(row.length, row.word_index);
    running[key] += row.nll;
    const bool last_of_word = i + 1 == rows.size() || rows[i + 1].length != row.length ||
                              rows[i + 1].word_index != row.word_index;
    EXPECT_EQ(row.has_word_nll, last_of_word) << "the sum stands on the word's last row only";
    if (row.has_word_nll) {
      EXPECT_NEAR(row.word_nll, running[key], 1e-6 * running[key]);
      word_total[row.length] += row.word_nll;
      ++word_sum_rows[key];
    }
  }
  // Every word of the text has its sum, but perhaps the first (one token, never scored).
  for (const int64_t length : {8, 16}) {
    int64_t words = 0;
    for (const auto& [key, n] : word_sum_rows) words += key.first == length ? n : 0;
    EXPECT_GE(words, static_cast<int64_t>(expected.size()) - 1) << "length " << length;
  }
  const auto j = nlohmann::json::parse(read_text(dir + "/out.json"));
  for (const auto& result : j.at("results")) {
    const double total = result.at("nll_sum");
    EXPECT_NEAR(word_total[result.at("length").get<int64_t>()], total, 1e-6 * total);
  }
}

TEST(WordSurprisal, ByteRunsWordsAddUpToTheTotal) {
  const std::string run = testing::tiny_run("relative", "byte");
  expect_words_add_up(run, testing::fresh_dir("word_surprisal_byte") + "/rows.tsv");
}

TEST(WordSurprisal, SubwordRunsWordsAddUpToTheTotal) {
  if (!subword_available())
    GTEST_SKIP() << "this build has no sentencepiece: " << subword_problem();
  const std::string run = testing::tiny_run("relative", "bpe", 3, {"--set", "data.vocab_size=300"});
  expect_words_add_up(run, testing::fresh_dir("word_surprisal_bpe") + "/rows.jsonl");
}

// A word run's word is its token, and the word's surprisal that token's NLL.
TEST(WordSurprisal, AWordRunsWordIsItsToken) {
  const std::string run = testing::tiny_run("relative", "word");
  const std::string dir = testing::fresh_dir("word_surprisal_word");
  testing::write_text(dir + "/a.txt", kText);
  const auto r = run_txl({"eval", "--run", run, "--text", dir + "/a.txt", "--lengths", "8",
                          "--per-token", dir + "/rows.tsv"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto rows = read_rows(dir + "/rows.tsv");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    EXPECT_EQ(row.word_index, row.index);
    EXPECT_TRUE(row.has_word_nll);
    EXPECT_EQ(row.word_nll, row.nll);
  }
}

}  // namespace
}  // namespace txl
