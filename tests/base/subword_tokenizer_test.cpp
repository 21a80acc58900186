// Subword tokenizers (bpe, unigram through sentencepiece): lossless round trips in any script,
// the same model and ids from the same corpus, and a vocab.json + tokenizer.model pair that a
// run directory keeps and that is checked when read back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base_test_util.h"
#include "txl/data/subword_model.h"
#include "txl/data/tokenizer.h"
#include "txl/data/vocab.h"
#include "txl/util/error.h"

namespace txl {
namespace {

namespace fs = std::filesystem;

#define SKIP_WITHOUT_SENTENCEPIECE()                                                 \
  if (!subword_available()) {                                                        \
    GTEST_SKIP() << "this build has no sentencepiece: bpe and unigram are left out"; \
  }

// A few kilobytes of English, Chinese and mixed lines, fixed by the seed: enough text for a
// few hundred pieces beyond the 256 bytes.
std::string training_text(unsigned seed = 7) {
  const std::vector<std::string> syllables = {"ka", "to", "ri",  "mu", "sen", "dal", "or", "ix",
                                              "pe", "lo", "ban", "ut", "天",  "地",  "玄", "黄",
                                              "宇", "宙", "ve",  "zo", "qui", "nar", "es", "ty"};
  std::mt19937 rng(seed);
  std::string text;
  for (int line = 0; line < 400; ++line) {
    text += "the";
    const int n = 3 + static_cast<int>(rng() % 8);
    for (int w = 0; w < n; ++w) {
      text += (rng() % 10 == 0) ? "  " : " ";
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
        text += syllables[rng() % syllables.size()];
      }
    }
    text += " cat";
    text += (line % 25 == 0) ? "\n\n" : "\n";
  }
  return text;
}

DataConfig subword_config(TokenizerKind kind, int64_t vocab_size = 320) {
  DataConfig c;
  c.dir = "unused";
  c.tokenizer = kind;
  c.vocab_size = vocab_size;
  return c;
}

std::vector<int64_t> widen(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

using testing::contains;
using testing::input_error;

class Subword : public ::testing::TestWithParam<TokenizerKind> {};

TEST_P(Subword, RoundTripsEnglishChineseAndMixedScriptsExactly) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Vocab vocab = build_vocab(training_text(), subword_config(GetParam()), "train.txt");
  EXPECT_EQ(vocab.size(), 320);
  EXPECT_EQ(vocab.token(0), kUnkToken);
  EXPECT_EQ(vocab.token(1), kEosToken);
  // Spaces kept as they are, characters never seen in training (Cyrillic, emoji, Arabic),
  // an empty line and a tab: identity normalization and byte fallback lose nothing.
  for (const std::string text :
       {std::string("the cat sat on the mat\n"), std::string("天地玄黄，宇宙洪荒。\n"),
        std::string("  two  spaces,\ta tab\n\nпривет \xF0\x9F\x98\x80 مرحبا 天地 cat\n")}) {
    SCOPED_TRACE(text);
    EncodeStats stats;
    const auto ids = encode(text, vocab, "valid.txt", &stats);
    EXPECT_EQ(stats.tokens, static_cast<int64_t>(ids.size()));
    EXPECT_EQ(stats.unknown, 0);  // byte fallback: nothing becomes <unk>
    EXPECT_EQ(decode(widen(ids), vocab), text);
  }
}

TEST_P(Subword, EveryLineEndsInEosAndCommonWordsArePieces) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Vocab vocab = build_vocab(training_text(), subword_config(GetParam()), "train.txt");
  const auto ids = encode("the cat\n\nthe mat", vocab, "s");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 3);  // two '\n' and the last line's end
  EXPECT_EQ(ids.back(), 1);
  // Frequent words in the training text are single pieces, so the subword text is shorter
  // than its characters.
  EXPECT_LT(ids.size(), std::string("the cat\n\nthe mat").size());
  // sentencepiece marks a leading space with "▁" (3 bytes): some pieces are a space and a word.
  const auto& tokens = vocab.tokens();
  EXPECT_TRUE(std::any_of(tokens.begin(), tokens.end(), [](const std::string& t) {
    return t.rfind("\xE2\x96\x81", 0) == 0 && t.size() > 4;
  }));
}

TEST_P(Subword, TheSameCorpusGivesTheSameModelAndIds) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const std::string text = training_text();
  const Vocab a = build_vocab(text, subword_config(GetParam()), "train.txt");
  const Vocab b = build_vocab(text, subword_config(GetParam()), "train.txt");
  ASSERT_NE(a.subword(), nullptr);
  EXPECT_EQ(a.subword()->bytes(), b.subword()->bytes());
  EXPECT_EQ(a.checksum(), b.checksum());
  EXPECT_EQ(encode(text, a, "t"), encode(text, b, "t"));
  // A different corpus or size is a different model.
  const Vocab other = build_vocab(training_text(8), subword_config(GetParam()), "train.txt");
  EXPECT_NE(other.checksum(), a.checksum());
  const Vocab bigger = build_vocab(text, subword_config(GetParam(), 330), "train.txt");
  EXPECT_EQ(bigger.size(), 330);
  EXPECT_NE(bigger.checksum(), a.checksum());
}

TEST_P(Subword, InvalidUtf8NamesTheSourceAndOffset) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Vocab vocab = build_vocab(training_text(), subword_config(GetParam()), "train.txt");
  const std::string message = input_error([&] { encode("ok\nab\xFF", vocab, "valid.txt"); });
  EXPECT_TRUE(contains(message, "valid.txt: invalid UTF-8 at byte offset 5")) << message;
  const std::string train = input_error(
      [&] { build_vocab("good\n\xC3", subword_config(GetParam()), "corpus/train.txt"); });
  EXPECT_TRUE(contains(train, "corpus/train.txt: invalid UTF-8 at byte offset 5")) << train;
}

TEST_P(Subword, AVocabularySizeTheTextCannotSupportNamesTheKey) {
  SKIP_WITHOUT_SENTENCEPIECE();
  // Too small: 256 bytes, <unk>, <eos> and the text's characters do not fit in 100.
  const std::string small = input_error(
      [&] { build_vocab(training_text(), subword_config(GetParam(), 100), "train.txt"); });
  EXPECT_TRUE(contains(small, "data.vocab_size (100)")) << small;
  EXPECT_TRUE(contains(small, "train.txt")) << small;
  // sentencepiece's own advice names its flags (--character_coverage), which txl lacks.
  EXPECT_FALSE(contains(small, "--")) << small;
  EXPECT_FALSE(contains(small, "character_coverage")) << small;
  EXPECT_TRUE(contains(small, "In txl, raise data.vocab_size to at least ")) << small;
  // Too large for a few kilobytes of text.
  const std::string large = input_error(
      [&] { build_vocab(training_text(), subword_config(GetParam(), 50000), "train.txt"); });
  EXPECT_TRUE(contains(large, "data.vocab_size (50000)")) << large;
  EXPECT_TRUE(contains(large, "too high")) << large;
  EXPECT_FALSE(contains(large, "--")) << large;
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Subword,
                         ::testing::Values(TokenizerKind::kBpe, TokenizerKind::kUnigram),
                         [](const auto& info) { return to_string(info.param); });

TEST(Subword, BpeAndUnigramOfOneCorpusAreDifferentVocabularies) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Vocab bpe = build_vocab(training_text(), subword_config(TokenizerKind::kBpe), "t");
  const Vocab unigram = build_vocab(training_text(), subword_config(TokenizerKind::kUnigram), "t");
  EXPECT_NE(bpe.checksum(), unigram.checksum());
  EXPECT_FALSE(bpe == unigram);
}

TEST(Subword, SplitNeedsAModelButTheCorpusCheckCountsAtLeastTheWords) {
  EXPECT_THROW(split_tokens("a b\n", TokenizerKind::kBpe, "s"), std::invalid_argument);
  // Each word is one piece or more, and each line ends in <eos>.
  EXPECT_EQ(count_tokens("a b\nc\n", TokenizerKind::kBpe, "s"), 5);
}

class SubwordFile : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return folder_.file(name); }
  testing::TestDir folder_{"subword"};
};

TEST_F(SubwordFile, SavedWithItsModelAndLoadedBackEqual) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Vocab vocab =
      build_vocab(training_text(), subword_config(TokenizerKind::kUnigram), "train.txt");
  vocab.save(path("vocab.json"));
  ASSERT_TRUE(fs::exists(path(kSubwordModelFile)));
  EXPECT_EQ(fs::file_size(path(kSubwordModelFile)), vocab.subword()->bytes().size());
  const Vocab back = Vocab::load(path("vocab.json"));
  EXPECT_TRUE(back == vocab);
  EXPECT_EQ(back.checksum(), vocab.checksum());
  EXPECT_EQ(back.kind(), TokenizerKind::kUnigram);
  const std::string text = "the cat 天地 ran\n";
  EXPECT_EQ(encode(text, back, "s"), encode(text, vocab, "s"));
}

TEST_F(SubwordFile, AMissingDamagedOrForeignModelIsNamed) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const Vocab vocab = build_vocab(training_text(), subword_config(TokenizerKind::kBpe), "t");
  vocab.save(path("vocab.json"));
  const std::string model = path(kSubwordModelFile);
  {  // one byte changed
    std::fstream f(model, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  std::string message = input_error([&] { Vocab::load(path("vocab.json")); });
  EXPECT_TRUE(contains(message, model + ": damaged or replaced")) << message;

  fs::remove(model);
  message = input_error([&] { Vocab::load(path("vocab.json")); });
  EXPECT_TRUE(contains(message, model + ": missing")) << message;

  // Another corpus's model with a vocab.json edited to match its checksum: the pieces differ.
  const Vocab other = build_vocab(training_text(9), subword_config(TokenizerKind::kBpe), "t");
  other.save(path("vocab.json"));
  nlohmann::json j = vocab.to_json();
  j["model_xxh64"] = other.to_json()["model_xxh64"];
  std::ofstream(path("vocab.json")) << j.dump();
  message = input_error([&] { Vocab::load(path("vocab.json")); });
  EXPECT_TRUE(contains(message, "differ from the pieces of tokenizer.model")) << message;

  EXPECT_TRUE(contains(input_error([&] { SubwordModel::load("not a model", "m.model"); }),
                       "m.model: not a sentencepiece model"));
}

}  // namespace
}  // namespace txl
