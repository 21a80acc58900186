// WordTable against std::map, and the word vocabulary of a split long enough to be counted
// on several threads against a one-pass oracle written from the rule (descending count,
// ties by first occurrence).
#include "txl/data/word_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "txl/data/tokenizer.h"
#include "txl/data/vocab.h"

namespace txl {
namespace {

using namespace std::string_literals;

std::string word_of(uint32_t n) { return "w" + std::to_string(n * 2654435761u % 1000003u); }

TEST(WordTable, IndicesAreDenseInFirstAdditionOrderAndSurviveGrowth) {
  WordTable table(4);  // grows many times
  std::map<std::string, int32_t> oracle;
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const std::string w = word_of(rng() % 50000);
    const auto it = oracle.find(w);
    const int32_t expected = it == oracle.end() ? static_cast<int32_t>(oracle.size()) : it->second;
    if (it == oracle.end()) oracle.emplace(w, expected);
    ASSERT_EQ(table.add(w), expected) << w;
  }
  ASSERT_EQ(table.size(), oracle.size());
  for (const auto& [w, i] : oracle) {
    EXPECT_EQ(table.find(w), i);
    EXPECT_EQ(table.word(i), w);
  }
  EXPECT_EQ(table.find("absent"), -1);
  EXPECT_EQ(table.find(""), -1);
  EXPECT_EQ(table.add(""), static_cast<int32_t>(oracle.size())) << "the empty word is a word";
}

TEST(WordTable, WordsThatShareEightBytesOrAHashPrefixStayApart) {
  WordTable table;
  const std::vector<std::string> words = {
      "abcdefgh", "abcdefghi", "abcdefghij", "abcdefgh\0"s, "a", std::string(1, '\0'), "abcdefgH"};
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(table.add(words[i]), int32_t(i)) << i;
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(table.find(words[i]), int32_t(i)) << i;
  EXPECT_NE(hash_word("abcdefgh"), hash_word("abcdefghi"));
}

// A text over 4 MB (counted on every core), with many words tied in count.
std::string long_text() {
  std::mt19937 rng(11);
  std::string text;
  while (text.size() < (size_t{5} << 20)) {
    for (int i = 0; i < 12; ++i) {
      const uint32_t r = rng() % 1000;
      text += word_of(r < 500 ? r % 20 : r) + (i < 11 ? " " : "\n");
    }
  }
  return text;
}

TEST(WordVocab, ManyThreadsCountLikeTheOnePassRule) {
  const std::string text = long_text();
  std::map<std::string, std::pair<int64_t, size_t>> counts;  // word -> (count, first)
  size_t order = 0, start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ' ' || text[i] == '\n') {
      if (i > start) {
        auto [it, added] = counts.emplace(text.substr(start, i - start), std::make_pair(0, order));
        order += added;
        ++it->second.first;
      }
      start = i + 1;
    }
  }
  std::vector<std::pair<std::string, std::pair<int64_t, size_t>>> ranked(counts.begin(),
                                                                         counts.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.second.first != b.second.first) return a.second.first > b.second.first;
    return a.second.second < b.second.second;
  });
  std::vector<std::string> expected = {kUnkToken, kEosToken};
  for (const auto& r : ranked) expected.push_back(r.first);
  DataConfig config;
  config.dir = "unused";
  config.tokenizer = TokenizerKind::kWord;
  EXPECT_EQ(build_vocab(text, config, "train.txt").tokens(), expected);
}

}  // namespace
}  // namespace txl
