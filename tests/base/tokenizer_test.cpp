// Tokenizers and vocabularies: the ids a model is trained on and the vocab.json a run keeps.
#include "txl/data/tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base_test_util.h"
#include "txl/data/vocab.h"
#include "txl/util/error.h"
#include "txl/util/utf8.h"

namespace txl {
namespace {

using Tokens = std::vector<std::string>;

DataConfig char_config() {
  DataConfig c;
  c.dir = "unused";
  c.tokenizer = TokenizerKind::kChar;
  return c;
}

DataConfig word_config(int64_t min_freq = 1, int64_t max_vocab = 0) {
  DataConfig c;
  c.dir = "unused";
  c.tokenizer = TokenizerKind::kWord;
  c.min_freq = min_freq;
  c.max_vocab = max_vocab;
  return c;
}

std::vector<int64_t> widen(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

using testing::contains;
using testing::input_error;

// ---- char tokenizer ----------------------------------------------------------------------

TEST(CharTokenizer, OneTokenPerCodePointIncludingNewline) {
  const Tokens tokens = split_tokens("天地玄黄，宇宙洪荒。\n", TokenizerKind::kChar, "s");
  ASSERT_EQ(tokens.size(), 11u);
  EXPECT_EQ(tokens[0], "天");
  EXPECT_EQ(tokens[4], "，");
  EXPECT_EQ(tokens[10], "\n");
  EXPECT_EQ(split_tokens("a\xF0\x9F\x98\x80"
                         "b",
                         TokenizerKind::kChar, "s"),
            (Tokens{"a", "\xF0\x9F\x98\x80", "b"}));
  EXPECT_EQ(count_tokens("天地玄黄，宇宙洪荒。\n", TokenizerKind::kChar, "s"), 11);
}

TEST(CharTokenizer, RoundTripsAsciiChineseAndEmoji) {
  for (const std::string text :
       {"To be, or not to be:\nthat is the question.\n", "天地玄黄，宇宙洪荒。\n",
        "emoji \xF0\x9F\x98\x80\xF0\x9F\x8C\x8D and text\n"}) {
    const Vocab vocab = build_vocab(text, char_config(), "train.txt");
    EncodeStats stats;
    const auto ids = encode(text, vocab, "train.txt", &stats);
    EXPECT_EQ(stats.unknown, 0);
    EXPECT_EQ(stats.tokens, static_cast<int64_t>(ids.size()));
    EXPECT_EQ(static_cast<size_t>(stats.tokens), decode_utf8(text, "s").size());
    EXPECT_EQ(decode(widen(ids), vocab), text);
  }
}

TEST(CharTokenizer, VocabIsUnkThenFrequencyThenFirstOccurrence) {
  // b:3, a:2, c:2 (a seen first), \n:1
  const Vocab vocab = build_vocab("bacbcab\n", char_config(), "train.txt");
  EXPECT_EQ(vocab.tokens(), (Tokens{"<unk>", "b", "a", "c", "\n"}));
  EXPECT_EQ(vocab.kind(), TokenizerKind::kChar);
  EXPECT_EQ(vocab.unk_id(), 0);
}

TEST(CharTokenizer, MinFreqAndMaxVocabDoNotApply) {
  DataConfig c = char_config();
  c.min_freq = 5;
  c.max_vocab = 2;
  EXPECT_EQ(build_vocab("aab", c, "train.txt").size(), 3);  // <unk> a b
}

TEST(CharTokenizer, UnseenCharactersBecomeUnkAndAreCounted) {
  const Vocab vocab = build_vocab("天地\n", char_config(), "train.txt");
  EncodeStats stats;
  const auto ids = encode("天玄地黄\n", vocab, "valid.txt", &stats);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, 2, 0, 3}));
  EXPECT_EQ(stats.tokens, 5);
  EXPECT_EQ(stats.unknown, 2);
  EXPECT_EQ(decode(widen(ids), vocab), "天<unk>地<unk>\n");
}

TEST(CharTokenizer, InvalidUtf8NamesSourceAndOffset) {
  const Vocab vocab = build_vocab("abc", char_config(), "train.txt");
  EXPECT_TRUE(contains(input_error([&] { encode("abc\xFF", vocab, "valid.txt"); }),
                       "valid.txt: invalid UTF-8 at byte offset 3"));
  EXPECT_TRUE(contains(input_error([&] { build_vocab("a\x80", char_config(), "train.txt"); }),
                       "train.txt: invalid UTF-8 at byte offset 1"));
}

// ---- word tokenizer ----------------------------------------------------------------------

TEST(WordTokenizer, SplitsOnAsciiWhitespaceWithEosPerLine) {
  EXPECT_EQ(split_tokens(" the cat\tsat \n\non  mat", TokenizerKind::kWord, "s"),
            (Tokens{"the", "cat", "sat", "<eos>", "<eos>", "on", "mat", "<eos>"}));
  EXPECT_EQ(split_tokens("a\n", TokenizerKind::kWord, "s"), (Tokens{"a", "<eos>"}));
  EXPECT_EQ(split_tokens("", TokenizerKind::kWord, "s"), Tokens{});
  EXPECT_EQ(count_tokens(" the cat\tsat \n\non  mat", TokenizerKind::kWord, "s"), 8);
}

TEST(WordTokenizer, CrlfTokenizesLikeLf) {
  EXPECT_EQ(split_tokens("a b\r\nc\r\n", TokenizerKind::kWord, "s"),
            split_tokens("a b\nc\n", TokenizerKind::kWord, "s"));
}

TEST(WordTokenizer, NonAsciiSpacesAreNotSeparators) {
  // U+3000 IDEOGRAPHIC SPACE stays inside the word: splitting is ASCII-only by design.
  EXPECT_EQ(split_tokens("天\u3000地 玄", TokenizerKind::kWord, "s"),
            (Tokens{"天\u3000地", "玄", "<eos>"}));
}

TEST(WordTokenizer, DecodeOfEncodeJoinsTokensWithSpacesAndNewlines) {
  const std::string text = "  the cat sat\r\non the\tmat  \n\n= heading =\nlast line";
  const Vocab vocab = build_vocab(text, word_config(), "train.txt");
  EncodeStats stats;
  const auto ids = encode(text, vocab, "train.txt", &stats);
  EXPECT_EQ(stats.unknown, 0);
  EXPECT_EQ(stats.tokens, 16);
  EXPECT_EQ(decode(widen(ids), vocab), "the cat sat\non the mat\n\n= heading =\nlast line\n");
}

TEST(WordTokenizer, VocabHasUnkEosThenFrequencyThenFirstOccurrence) {
  const std::string train = "x y z\ny z z w\n";  // z:3 y:2 x:1 w:1 <eos>:2
  const Vocab a = build_vocab(train, word_config(), "train.txt");
  EXPECT_EQ(a.tokens(), (Tokens{"<unk>", "<eos>", "z", "y", "x", "w"}));
  EXPECT_EQ(a.id("<eos>"), 1);
  const Vocab b = build_vocab(train, word_config(), "train.txt");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.checksum(), b.checksum());
  EXPECT_EQ(encode(train, a, "t"), encode(train, b, "t"));
}

TEST(WordTokenizer, MinFreqDropsRareWords) {
  const Vocab vocab = build_vocab("x y z\ny z z w\n", word_config(/*min_freq=*/2), "train.txt");
  EXPECT_EQ(vocab.tokens(), (Tokens{"<unk>", "<eos>", "z", "y"}));
  EncodeStats stats;
  encode("x y z w\n", vocab, "train.txt", &stats);
  EXPECT_EQ(stats.unknown, 2);
}

TEST(WordTokenizer, MaxVocabCountsTheSpecials) {
  const Vocab vocab =
      build_vocab("x y z\ny z z w\n", word_config(/*min_freq=*/1, /*max_vocab=*/3), "train.txt");
  EXPECT_EQ(vocab.tokens(), (Tokens{"<unk>", "<eos>", "z"}));
}

TEST(WordTokenizer, LiteralUnkInTextIsTheUnkTokenNotAnUnknown) {
  const std::string train = "a <unk> b <unk>\n<unk> a\n";
  const Vocab vocab = build_vocab(train, word_config(), "train.txt");
  EXPECT_EQ(vocab.tokens(), (Tokens{"<unk>", "<eos>", "a", "b"}));
  EncodeStats stats;
  const auto ids = encode(train, vocab, "train.txt", &stats);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 0, 3, 0, 1, 0, 2, 1}));
  EXPECT_EQ(stats.unknown, 0);
  EXPECT_EQ(stats.tokens, 8);
}

TEST(WordTokenizer, UnseenWordsBecomeUnkAndAreCounted) {
  const Vocab vocab = build_vocab("the cat sat\n", word_config(), "train.txt");
  EncodeStats stats;
  const auto ids = encode("the dog sat on <unk>\n", vocab, "valid.txt", &stats);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 0, 4, 0, 0, 1}));
  EXPECT_EQ(stats.tokens, 6);
  EXPECT_EQ(stats.unknown, 2);  // dog, on; the literal <unk> is not an unknown
  EXPECT_EQ(decode(widen(ids), vocab), "the <unk> sat <unk> <unk>\n");
}

TEST(WordTokenizer, InvalidUtf8NamesSourceAndOffset) {
  EXPECT_TRUE(
      contains(input_error([] { split_tokens("ok \xC0\x80", TokenizerKind::kWord, "w.txt"); }),
               "w.txt: invalid UTF-8 at byte offset 3 (overlong encoding)"));
}

TEST(Decode, RejectsIdsOutsideTheVocabulary) {
  const Vocab vocab = build_vocab("ab", char_config(), "train.txt");
  EXPECT_THROW(decode({0, 3}, vocab), std::out_of_range);
  EXPECT_THROW(decode({-1}, vocab), std::out_of_range);
}

// ---- vocabulary --------------------------------------------------------------------------

class VocabFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& content) {
    const std::string path = folder_.file(name);
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  testing::TestDir folder_{"vocab"};
  const std::filesystem::path& dir_ = folder_.path();
};

TEST(Vocab, LookupAndUnknownTokens) {
  const Vocab v(TokenizerKind::kWord, {"<unk>", "<eos>", "the"});
  EXPECT_EQ(v.size(), 3);
  EXPECT_EQ(v.id("the"), 2);
  EXPECT_EQ(v.id("never-seen"), v.unk_id());
  EXPECT_TRUE(v.contains("the"));
  EXPECT_FALSE(v.contains("never-seen"));
  EXPECT_EQ(v.token(1), "<eos>");
  EXPECT_THROW(v.token(3), std::out_of_range);
}

TEST(Vocab, ConstructorRejectsDuplicatesAndMissingUnk) {
  EXPECT_THROW(Vocab(TokenizerKind::kChar, {"<unk>", "a", "a"}), std::invalid_argument);
  EXPECT_THROW(Vocab(TokenizerKind::kChar, {"a", "b"}), std::invalid_argument);
}

TEST(Vocab, ChecksumIsFrozenAndSensitiveToKindOrderAndBoundaries) {
  const Vocab v(TokenizerKind::kWord, {"<unk>", "<eos>", "the", "cat"});
  // FNV-1a 64 over "word", then 0xFF + token for each token. Frozen: checkpoints store it,
  // so a change here would make every saved run look incompatible.
  EXPECT_EQ(v.checksum(), 0xe4fe673a4cbaf649ull);
  EXPECT_NE(v.checksum(), Vocab(TokenizerKind::kWord, {"<unk>", "<eos>", "cat", "the"}).checksum());
  EXPECT_NE(Vocab(TokenizerKind::kChar, {"<unk>", "a"}).checksum(),
            Vocab(TokenizerKind::kWord, {"<unk>", "a"}).checksum());
  EXPECT_NE(Vocab(TokenizerKind::kWord, {"<unk>", "ab", "c"}).checksum(),
            Vocab(TokenizerKind::kWord, {"<unk>", "a", "bc"}).checksum());
}

TEST_F(VocabFile, SaveLoadRoundTripKeepsIdsAndChecksum) {
  const Vocab original =
      build_vocab("天地玄黄，宇宙洪荒。\n\xF0\x9F\x98\x80\n", char_config(), "t");
  const std::string path = (dir_ / "vocab.json").string();
  original.save(path);
  const Vocab loaded = Vocab::load(path);
  EXPECT_EQ(loaded, original);
  EXPECT_EQ(loaded.kind(), TokenizerKind::kChar);
  EXPECT_EQ(loaded.checksum(), original.checksum());
  EXPECT_EQ(loaded.id("玄"), original.id("玄"));

  const Vocab words = build_vocab("a b <unk>\nb\n", word_config(), "t");
  words.save(path);  // overwrites atomically
  EXPECT_EQ(Vocab::load(path), words);
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename(), "vocab.json") << "temporary file left behind";
  }
}

TEST(Vocab, JsonLayout) {
  const Vocab v(TokenizerKind::kWord, {"<unk>", "<eos>", "x"});
  const nlohmann::json j = v.to_json();
  EXPECT_EQ(
      j,
      nlohmann::json::parse(
          R"({"format":"txl-vocab","version":1,"tokenizer":"word","tokens":["<unk>","<eos>","x"]})"));
}

TEST(Vocab, FromJsonRejectsMalformedContentNamingTheSource) {
  const auto base = nlohmann::json::parse(
      R"({"format":"txl-vocab","version":1,"tokenizer":"word","tokens":["<unk>","<eos>","x"]})");
  EXPECT_EQ(Vocab::from_json(base, "run/vocab.json").size(), 3);

  struct Case {
    const char* name;
    nlohmann::json j;
    const char* expect;
  };
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json j = base;
    j[key] = std::move(value);
    return j;
  };
  nlohmann::json no_format = base;
  no_format.erase("format");
  const Case cases[] = {
      {"not an object", nlohmann::json::array(), "JSON object"},
      {"wrong format", with("format", "txl-config"), "format"},
      {"missing format", no_format, "format"},
      {"wrong version", with("version", 2), "version 2"},
      {"version as string", with("version", "1"), "version"},
      {"unknown tokenizer", with("tokenizer", "wordpiece"), "\"wordpiece\""},
      {"tokens not an array", with("tokens", "abc"), "array"},
      {"non-string token", with("tokens", {"<unk>", "<eos>", 5}), "tokens[2] must be a string"},
      {"duplicate", with("tokens", {"<unk>", "<eos>", "x", "x"}), "duplicates tokens[2]"},
      {"missing unk", with("tokens", {"<eos>", "x"}), "lacks <unk>"},
      {"word missing eos", with("tokens", {"<unk>", "x"}), "lacks <eos>"},
      {"empty token", with("tokens", {"<unk>", "<eos>", ""}), "tokens[2] is empty"},
      {"word with space", with("tokens", {"<unk>", "<eos>", "a b"}), "whitespace"},
      {"unknown key", with("extra", 1), "unknown key \"extra\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string message = input_error([&] { Vocab::from_json(c.j, "run/vocab.json"); });
    EXPECT_EQ(message.rfind("run/vocab.json: ", 0), 0u) << message;
    EXPECT_TRUE(contains(message, c.expect)) << message;
  }

  nlohmann::json chars = with("tokenizer", "char");
  chars["tokens"] = {"<unk>", "ab"};
  EXPECT_TRUE(contains(input_error([&] { Vocab::from_json(chars, "v.json"); }),
                       "tokens[1] is not a single code point"));
}

TEST_F(VocabFile, LoadNamesThePathOnEveryProblem) {
  const std::string missing = (dir_ / "nope.json").string();
  EXPECT_TRUE(contains(input_error([&] { Vocab::load(missing); }), missing));
  const std::string broken = write("broken.json", "{\"format\": ");
  EXPECT_TRUE(contains(input_error([&] { Vocab::load(broken); }), broken + ": invalid JSON"));
  const std::string empty = write("empty.json", "");
  EXPECT_TRUE(contains(input_error([&] { Vocab::load(empty); }), empty));
  const std::string wrong = write("wrong.json", R"({"format":"other"})");
  EXPECT_TRUE(contains(input_error([&] { Vocab::load(wrong); }), wrong + ": not a txl vocabulary"));
  EXPECT_TRUE(contains(input_error([&] { Vocab::load(dir_.string()); }), dir_.string()));
  // A number too large for a double is nlohmann's out_of_range, not a parse_error.
  const std::string huge = write("huge.json", R"({"format":1e999})");
  EXPECT_TRUE(contains(input_error([&] { Vocab::load(huge); }), huge + ": invalid JSON"));
}

TEST_F(VocabFile, LoadRefusesADuplicateKeyNamingIt) {
  const Vocab words = build_vocab("a b\nb\n", word_config(), "t");
  std::string text = words.to_json().dump();
  // A second "tokenizer" after the first: nlohmann::json alone would keep the last silently.
  text.insert(text.size() - 1, R"(,"tokenizer":"char")");
  const std::string path = write("duplicate.json", text);
  const std::string message = input_error([&] { Vocab::load(path); });
  EXPECT_TRUE(contains(message, path + ": duplicate key \"tokenizer\"")) << message;
}

}  // namespace
}  // namespace txl
