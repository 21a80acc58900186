// The token cache and whole-split tokenizing: chunked, threaded tokenizing gives encode()'s
// ids for every tokenizer; cached ids and vocabularies come back equal; a damaged, truncated
// or foreign entry is detected (and load_corpus rebuilds it); an edited split misses.
#include "txl/data/token_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base_test_util.h"
#include "txl/data/corpus.h"
#include "txl/data/subword_model.h"
#include "txl/data/tokenize_text.h"
#include "txl/data/tokenizer.h"
#include "txl/util/error.h"
#include "txl/util/hash.h"

namespace txl {
namespace {

namespace fs = std::filesystem;

class TokenCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("TXL_CACHE_DIR");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("TXL_CACHE_DIR", cache().c_str(), 1);
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("TXL_CACHE_DIR", saved_->c_str(), 1);
    } else {
      ::unsetenv("TXL_CACHE_DIR");
    }
  }
  std::string cache() const { return (dir_ / "cache").string(); }
  std::string corpus(const std::string& train, const std::string& valid = "the cat sat\n") {
    const fs::path c = dir_ / "corpus";
    fs::create_directories(c);
    std::ofstream(c / "train.txt") << train;
    std::ofstream(c / "valid.txt") << valid;
    std::ofstream(c / "test.txt") << valid;
    return c.string();
  }
  testing::TestDir folder_{"token_cache"};
  const fs::path& dir_ = folder_.path();
  std::optional<std::string> saved_;
};

std::string lines(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += "line " + std::to_string(i) + " of the cat 天地 " + std::string(i % 7, 'x');
    text += i % 5 == 0 ? "\r\n" : (i % 11 == 0 ? "\n\n" : "\n");
  }
  return text + "no newline at the end";
}

DataConfig config_of(TokenizerKind kind) {
  DataConfig c;
  c.dir = "unused";
  c.tokenizer = kind;
  if (kind == TokenizerKind::kBpe || kind == TokenizerKind::kUnigram) c.vocab_size = 300;
  return c;
}

TEST(TokenizeText, ChunksOnThreadsGiveEncodesIdsForEveryTokenizer) {
  const std::string text = lines(400);
  for (const auto kind : {TokenizerKind::kChar, TokenizerKind::kWord, TokenizerKind::kBpe}) {
    if (kind == TokenizerKind::kBpe && !subword_available()) continue;
    SCOPED_TRACE(to_string(kind));
    // The vocabulary from part of the text, so the rest has unknowns to count (char, word).
    const Vocab vocab = build_vocab(text.substr(0, text.size() / 2), config_of(kind), "train.txt");
    EncodeStats stats;
    const auto reference = encode(text, vocab, "train.txt", &stats);
    for (const int threads : {1, 2, 3}) {
      for (const size_t chunk : {size_t{16}, size_t{100}, size_t{1000}}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, chunks of " + std::to_string(chunk));
        const auto split = tokenize_text(text, vocab, "train.txt", {chunk, threads, false});
        EXPECT_EQ(split.ids, reference);
        EXPECT_EQ(split.unknown, stats.unknown);
      }
    }
    if (kind != TokenizerKind::kBpe) EXPECT_GT(stats.unknown, 0);
  }
}

TEST(TokenizeText, InvalidUtf8InALaterChunkNamesItsOffsetInTheFile) {
  const std::string text = lines(50) + "\nbad \xFF here\n";
  const Vocab vocab = build_vocab("abc\n", config_of(TokenizerKind::kChar), "t");
  try {
    tokenize_text(text, vocab, "valid.txt", {64, 2, false});
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string expected =
        "valid.txt: invalid UTF-8 at byte offset " + std::to_string(text.find('\xFF'));
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST_F(TokenCacheTest, IdsComeBackAsWrittenAndDamageIsNamed) {
  const SplitKey key{0x1234, 0xabcd};
  TokenizedSplit split;
  split.ids = {0, 5, 7, 1, 2147483647, 3};
  split.unknown = 2;
  std::string problem;
  EXPECT_FALSE(read_cached_ids(cache(), key, &problem));
  EXPECT_EQ(problem, "");  // absent is not a problem
  ASSERT_EQ(write_cached_ids(cache(), key, split), "");
  const auto back = read_cached_ids(cache(), key, &problem);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ids, split.ids);
  EXPECT_EQ(back->unknown, 2);
  EXPECT_FALSE(read_cached_ids(cache(), SplitKey{0x1234, 0xabce}));  // another vocabulary

  const std::string path = cached_ids_path(cache(), key);
  const auto bytes = fs::file_size(path);
  {  // one id changed
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(bytes - 2));
    f.put('\x01');
  }
  EXPECT_FALSE(read_cached_ids(cache(), key, &problem));
  EXPECT_NE(problem.find(path + ": damaged"), std::string::npos) << problem;
  fs::resize_file(path, bytes - 4);
  EXPECT_FALSE(read_cached_ids(cache(), key, &problem));
  EXPECT_NE(problem.find("truncated"), std::string::npos) << problem;
  // A file renamed to another key's name.
  ASSERT_EQ(write_cached_ids(cache(), key, split), "");
  const SplitKey other{0x9999, 0xabcd};
  fs::rename(path, cached_ids_path(cache(), other));
  EXPECT_FALSE(read_cached_ids(cache(), other, &problem));
  EXPECT_NE(problem.find("another split"), std::string::npos) << problem;
  std::ofstream(path) << "junk";
  EXPECT_FALSE(read_cached_ids(cache(), key, &problem));
  EXPECT_NE(problem.find("not a txl token file"), std::string::npos) << problem;
}

TEST_F(TokenCacheTest, VocabulariesAreKeyedByTextAndSettings) {
  DataConfig words = config_of(TokenizerKind::kWord);
  const Vocab vocab = build_vocab("a b c\nb c\n", words, "t");
  ASSERT_EQ(write_cached_vocab(cache(), 42, words, vocab), "");
  const auto back = read_cached_vocab(cache(), 42, words);
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back == vocab);
  EXPECT_FALSE(read_cached_vocab(cache(), 43, words));  // another training text
  words.max_vocab = 3;
  EXPECT_FALSE(read_cached_vocab(cache(), 42, words));  // other settings
  EXPECT_FALSE(read_cached_vocab(cache(), 42, config_of(TokenizerKind::kChar)));
}

TEST_F(TokenCacheTest, LoadCorpusFillsTheCacheAndRebuildsADamagedEntry) {
  DataConfig config = config_of(TokenizerKind::kWord);
  config.dir = corpus(lines(300));
  const Corpus first = load_corpus(config);
  ASSERT_TRUE(fs::exists(cache() + "/tokens"));
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(cache() + "/tokens")) entries += e.is_regular_file();
  EXPECT_EQ(entries, 2u);  // train, and valid = test (same bytes, same key)

  const Corpus second = load_corpus(config);
  EXPECT_EQ(second.train, first.train);
  EXPECT_TRUE(second.vocab == first.vocab);

  // Damage the training split's entry: the next load tokenizes again and rewrites it.
  const std::string train_text = lines(300);
  const SplitKey key{xxh64(train_text.data(), train_text.size()), first.vocab.checksum()};
  const std::string path = cached_ids_path(cache(), key);
  ASSERT_TRUE(fs::exists(path));
  fs::resize_file(path, fs::file_size(path) - 8);
  ::testing::internal::CaptureStderr();
  const Corpus third = load_corpus(config);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning: token cache: " + path), std::string::npos) << err;
  EXPECT_EQ(third.train, first.train);
  EXPECT_TRUE(read_cached_ids(cache(), key));

  // An edited split is another key: it misses instead of reading the old ids.
  config.dir = corpus(lines(300) + "\nmore text\n");
  EXPECT_GT(load_corpus(config).train.size(), first.train.size());

  // Stats of a cached split are those of its first tokenizing.
  EncodeStats a, b;
  load_split(config.dir, "valid", first.vocab, &a);
  load_split(config.dir, "valid", first.vocab, &b);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.unknown, b.unknown);
  EXPECT_EQ(b.bytes, static_cast<int64_t>(std::string("the cat sat\n").size()));
}

// A command that refuses its input after loading (a segment longer than a stream, a model
// too big for memory) must leave the cache as it was: what loading made is held until the
// command commits it, and dropped otherwise.
TEST_F(TokenCacheTest, WritesAreHeldUntilCommittedAndDroppedOtherwise) {
  DataConfig config = config_of(TokenizerKind::kWord);
  config.dir = corpus(lines(50));
  // Ids are written at once to a pending file beside their entry, which nothing reads; an
  // entry is there only after the commit, and a dropped one leaves no file and no folder.
  const auto files = [&](bool with_pending = true) {
    size_t n = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(cache(), ec), end; !ec && it != end;
         it.increment(ec)) {
      const bool pending = it->path().filename().string().find(".pending.") != std::string::npos;
      n += it->is_regular_file() && (with_pending || !pending) ? 1 : 0;
    }
    return n;
  };
  {
    TokenCacheWrites dropped;
    const Corpus loaded = load_corpus(config, &dropped);
    EXPECT_FALSE(loaded.train.empty());
    load_split(config.dir, "valid", loaded.vocab, nullptr, &dropped);
  }
  EXPECT_EQ(files(), 0u) << "loading wrote to the cache before the command committed";
  EXPECT_FALSE(fs::exists(cache())) << "a dropped write leaves no folder behind";
  TokenCacheWrites kept;
  const Corpus loaded = load_corpus(config, &kept);
  EXPECT_EQ(files(/*with_pending=*/false), 0u);
  kept.commit();
  EXPECT_EQ(files(), 3u);  // vocab.json, train's ids, and valid = test (same bytes)
  kept.commit();           // committed entries are not written twice
  EXPECT_EQ(load_corpus(config).train, loaded.train);
}

TEST_F(TokenCacheTest, OffTurnsTheCacheOff) {
  ::setenv("TXL_CACHE_DIR", "off", 1);
  EXPECT_EQ(token_cache_dir(), "");
  DataConfig config = config_of(TokenizerKind::kChar);
  config.dir = corpus("abc\nabd\n");
  load_corpus(config);
  EXPECT_FALSE(fs::exists(cache()));
}

}  // namespace
}  // namespace txl
