// Reading the corpus is inside the memory check (issue 54, cause 10): a 200 MiB single-line
// corpus peaked at 2.0 GB against a 1.03 GB estimate, and a 2 GiB one ended in a bare
// std::bad_alloc. check_corpus_dir refuses, naming the split's file and the figures, a split
// whose text alone does not fit before reading it, and a corpus whose tokenizing would not
// fit once its tokens are counted, before any id is made.
#include <gtest/gtest.h>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/data/corpus.h"

namespace txl {
namespace {

// A character corpus whose training split is one line of `train_bytes` bytes.
DataConfig one_line_corpus(const std::string& name, size_t train_bytes) {
  const std::string dir = testing::fresh_dir(name) + "/corpus";
  std::filesystem::create_directories(dir);
  testing::write_corpus(dir, std::string(train_bytes, 'a') + "\n", "ab\nba\n", "ba\nab\n");
  DataConfig config;
  config.dir = dir;
  config.tokenizer = TokenizerKind::kChar;
  return config;
}

TEST(CorpusRead, TheNeedCountsTheTextAndTheIdsTwiceBesideTheSplitsBefore) {
  const std::vector<SplitSize> splits = {
      {"train.txt", 1000, 1000}, {"valid.txt", 100, 100}, {"test.txt", 10, 10}};
  const CorpusReadNeed need = corpus_read_need(splits);
  EXPECT_EQ(need.bytes, 1000 + 2 * 4 * 1000);  // the training split's text and ids, twice
  EXPECT_EQ(need.peak, "train.txt");
  // A later split larger than the first: its peak comes beside the ids read before it.
  const CorpusReadNeed later =
      corpus_read_need({{"train.txt", 10, 10}, {"valid.txt", 1000, 1000}, {"test.txt", 1, 1}});
  EXPECT_EQ(later.bytes, 4 * 10 + 1000 + 2 * 4 * 1000);
  EXPECT_EQ(later.peak, "valid.txt");
}

TEST(CorpusRead, ACorpusTooLargeToReadIsRefusedNamingItsFileAndTheFigures) {
  const DataConfig config = one_line_corpus("corpus_read", 100'000);
  const std::string train = split_path(config.dir, "train");
  // Its text alone (100 kB) is more than 50 kB: refused before it is read.
  testing::expect_input_error(
      [&] { check_corpus_dir(config, 50e3); },
      {train, "reading its 100 kB of text", "only 50 kB of memory is available"});
  // Its text fits 500 kB, its ids (4 bytes a token, made twice) do not.
  testing::expect_input_error(
      [&] { check_corpus_dir(config, 500e3); },
      {train, "reading and tokenizing the corpus needs about 900 kB at its peak",
       "tokens, made twice", "use a smaller corpus"});
  const std::vector<SplitSize> sizes = check_corpus_dir(config, 2e6);
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[0].path, train);
  EXPECT_EQ(sizes[0].bytes, 100'001);
  EXPECT_GT(sizes[0].tokens, 100'000);
  EXPECT_NO_THROW(check_corpus_dir(config, 0));  // unknown memory: nothing refused
}

}  // namespace
}  // namespace txl
