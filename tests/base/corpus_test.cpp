// Corpus folders: what `txl train` accepts, and the error a user sees for each broken layout.
#include "txl/data/corpus.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base_test_util.h"
#include "txl/data/tokenizer.h"
#include "txl/util/error.h"

namespace txl {
namespace {

namespace fs = std::filesystem;

// Each test gets its own folder: ctest runs tests of this binary in parallel processes.
class CorpusDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(::testing::TempDir()) /
            ("txl_corpus_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    dir_ = (root_ / "corpus").string();
  }
  void TearDown() override {
    // Restore permissions a test may have removed, so the folder can be deleted.
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(root_, ec)) {
      fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(root_, ec);
  }

  std::string write(const std::string& split, const std::string& content) {
    fs::create_directories(dir_);
    const std::string path = split_path(dir_, split);
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  void write_all(const std::string& train, const std::string& valid, const std::string& test) {
    write("train", train);
    write("valid", valid);
    write("test", test);
  }

  DataConfig config(TokenizerKind kind = TokenizerKind::kWord) const {
    DataConfig c;
    c.dir = dir_;
    c.tokenizer = kind;
    return c;
  }

  // The message check_corpus_dir raised, or "" when it accepted the folder.
  std::string check_error(TokenizerKind kind = TokenizerKind::kWord) const {
    try {
      check_corpus_dir(config(kind));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  fs::path root_;
  std::string dir_;
};

using testing::contains;

TEST_F(CorpusDir, LoadsWordCorpusWithVocabFromTrainOnly) {
  write_all("the cat sat\nthe cat ran\n", "the dog sat\n", "a cat\n");
  ASSERT_EQ(check_error(), "");
  const Corpus corpus = load_corpus(config());
  // the:2 cat:2 sat:1 ran:1 — "dog" and "a" exist only outside train.
  EXPECT_EQ(corpus.vocab.tokens(),
            (std::vector<std::string>{"<unk>", "<eos>", "the", "cat", "sat", "ran"}));
  EXPECT_EQ(corpus.train, (std::vector<int32_t>{2, 3, 4, 1, 2, 3, 5, 1}));
  EXPECT_EQ(corpus.valid, (std::vector<int32_t>{2, 0, 4, 1}));
  EXPECT_EQ(corpus.test, (std::vector<int32_t>{0, 3, 1}));

  EncodeStats stats;
  EXPECT_EQ(load_split(dir_, "valid", corpus.vocab, &stats), corpus.valid);
  EXPECT_EQ(stats.tokens, 4);
  EXPECT_EQ(stats.unknown, 1);
}

TEST_F(CorpusDir, LoadsCharCorpus) {
  write_all("天地玄黄，宇宙洪荒。\n", "天地\n", "日月盈昃\n");
  ASSERT_EQ(check_error(TokenizerKind::kChar), "");
  const Corpus corpus = load_corpus(config(TokenizerKind::kChar));
  EXPECT_EQ(corpus.vocab.size(), 12);  // <unk> + 11 distinct code points
  EXPECT_EQ(corpus.train.size(), 11u);
  EXPECT_EQ(decode(std::vector<int64_t>(corpus.valid.begin(), corpus.valid.end()), corpus.vocab),
            "天地\n");
  EncodeStats stats;
  load_split(dir_, "test", corpus.vocab, &stats);
  EXPECT_EQ(stats.unknown, 4);  // 日月盈昃 are not in train
}

TEST_F(CorpusDir, LoadsByteCorpusCutInsideACharacter) {
  // enwik8's splits are byte ranges of one UTF-8 file: valid.txt may start mid-character.
  write_all("\xE5\xA4\xA9\xE5\x9C\xB0\n", "\xA4\xA9\n", "\xE5\n\xFF");
  ASSERT_EQ(check_error(TokenizerKind::kByte), "");
  const Corpus corpus = load_corpus(config(TokenizerKind::kByte));
  EXPECT_EQ(corpus.vocab.size(), 7);  // <unk> + 6 distinct bytes
  EXPECT_EQ(corpus.train.size(), 7u);
  EXPECT_EQ(decode(std::vector<int64_t>(corpus.valid.begin(), corpus.valid.end()), corpus.vocab),
            "\xA4\xA9\n");
  EncodeStats stats;
  load_split(dir_, "test", corpus.vocab, &stats);
  EXPECT_EQ(stats.tokens, 3);
  EXPECT_EQ(stats.unknown, 1);  // \xFF is not in train
  EXPECT_EQ(bytes_per_token(stats), 1.0);
}

TEST_F(CorpusDir, ErrorsNameTheDirectory) {
  DataConfig c = config();
  c.dir = "";
  EXPECT_THROW(check_corpus_dir(c), InputError);

  // Missing folder.
  EXPECT_TRUE(contains(check_error(), dir_)) << check_error();
  EXPECT_TRUE(contains(check_error(), "does not exist"));

  // A file where the folder should be.
  std::ofstream(dir_) << "x";
  EXPECT_TRUE(contains(check_error(), dir_ + " is not a directory")) << check_error();
  EXPECT_THROW(load_corpus(config()), InputError);
}

TEST_F(CorpusDir, EachMissingSplitIsNamed) {
  for (const std::string split : {"train", "valid", "test"}) {
    SCOPED_TRACE(split);
    fs::remove_all(dir_);
    write_all("a b\n", "a b\n", "a b\n");
    const std::string path = split_path(dir_, split);
    fs::remove(path);
    const std::string message = check_error();
    EXPECT_TRUE(contains(message, path + ": missing")) << message;
    try {
      load_corpus(config());
      ADD_FAILURE() << "load_corpus accepted a corpus without " << path;
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), path)) << e.what();
    }
  }
}

TEST_F(CorpusDir, SplitThatIsADirectoryIsNamed) {
  write_all("a b\n", "a b\n", "a b\n");
  const std::string path = split_path(dir_, "valid");
  fs::remove(path);
  fs::create_directory(path);
  EXPECT_TRUE(contains(check_error(), path + ": is a directory")) << check_error();
  EXPECT_TRUE(contains(
      [&] {
        try {
          read_text_file(path);
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      path));
}

// A FIFO would block the read until a writer came (txl train hung with no output): every
// split is refused at once, naming it, and a link to a regular file is read through.
TEST_F(CorpusDir, ASplitThatIsAFifoIsRefusedAtOnceAndALinkIsFollowed) {
  for (const char* split : {"train", "valid", "test"}) {
    fs::remove_all(dir_);
    write_all("a b\n", "a b\n", "a b\n");
    const std::string path = split_path(dir_, split);
    fs::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
    const std::string expected = path + ": is a FIFO (named pipe), expected a text file";
    EXPECT_TRUE(contains(check_error(), expected)) << check_error();
    try {
      load_corpus(config());
      ADD_FAILURE() << "load_corpus read a FIFO";
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), expected)) << e.what();
    }
  }
  fs::remove_all(dir_);
  write_all("a b\n", "a b\n", "a b\n");
  const std::string valid = split_path(dir_, "valid");
  fs::rename(valid, root_ / "elsewhere.txt");
  fs::create_symlink(root_ / "elsewhere.txt", valid);
  EXPECT_EQ(check_error(), "");
  EXPECT_EQ(load_corpus(config()).valid.size(), 3u);  // a, b, <eos>
}

TEST_F(CorpusDir, EmptyWhitespaceOnlyAndTooShortSplitsAreNamed) {
  write_all("a b\n", "", "a b\n");
  const std::string valid = split_path(dir_, "valid");
  EXPECT_TRUE(contains(check_error(), valid + ": the valid split is empty")) << check_error();

  write("valid", " \n\t\r\n  \n");  // the word tokenizer would see three <eos>
  EXPECT_TRUE(contains(check_error(), valid + ": the valid split holds only whitespace"))
      << check_error();
  EXPECT_TRUE(contains(check_error(TokenizerKind::kChar), valid)) << "char must reject it too";

  write("valid", "a b\n");
  write("test", "x");  // one code point
  const std::string test = split_path(dir_, "test");
  const std::string message = check_error(TokenizerKind::kChar);
  EXPECT_TRUE(contains(message, test + ": 1 char token")) << message;
  EXPECT_EQ(check_error(TokenizerKind::kWord), "");  // "x" + <eos> is two word tokens
}

TEST_F(CorpusDir, InvalidUtf8NamesFileAndOffset) {
  write_all("a b\n", "ok\n\xE4\xB8", "a b\n");
  const std::string valid = split_path(dir_, "valid");
  for (const auto kind : {TokenizerKind::kChar, TokenizerKind::kWord}) {
    EXPECT_TRUE(contains(check_error(kind), valid + ": invalid UTF-8 at byte offset 3 (truncated"))
        << check_error(kind);
  }
}

TEST_F(CorpusDir, UnreadableSplitIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their permissions";
  write_all("a b\n", "a b\n", "a b\n");
  const std::string path = split_path(dir_, "test");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  EXPECT_TRUE(contains(check_error(), path + ": cannot open")) << check_error();
}

TEST_F(CorpusDir, CrlfCorpusEncodesLikeLf) {
  write_all("a b\r\nc a\r\n", "a\r\n", "b\r\n");
  const Corpus crlf = load_corpus(config());
  fs::remove_all(dir_);
  write_all("a b\nc a\n", "a\n", "b\n");
  const Corpus lf = load_corpus(config());
  EXPECT_EQ(crlf.vocab, lf.vocab);
  EXPECT_EQ(crlf.train, lf.train);
  EXPECT_EQ(crlf.valid, lf.valid);
}

TEST(SplitPath, JoinsAndValidates) {
  EXPECT_EQ(split_path("data/kjv", "train"), "data/kjv/train.txt");
  EXPECT_EQ(split_path("data/kjv/", "valid"), "data/kjv/valid.txt");
  try {
    split_path("data/kjv", "dev");
    ADD_FAILURE() << "accepted split dev";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "\"dev\"")) << e.what();
  }
}

TEST(ReadTextFile, MissingFileIsNamed) {
  const std::string path =
      ::testing::TempDir() + "txl_no_such_dir_" + std::to_string(::getpid()) + "/train.txt";
  try {
    read_text_file(path);
    ADD_FAILURE() << "read a missing file";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": no such file");
  }
}

}  // namespace
}  // namespace txl
