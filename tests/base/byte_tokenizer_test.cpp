// The byte tokenizer: one token per byte, no end-of-line token, any file (enwik8 is cut
// from a UTF-8 dump at byte offsets), and a vocab.json that stays UTF-8.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base_test_util.h"
#include "txl/data/tokenize_text.h"
#include "txl/data/tokenizer.h"
#include "txl/data/tokenizers.h"
#include "txl/data/vocab.h"

namespace txl {
namespace {

using Tokens = std::vector<std::string>;

DataConfig byte_config() {
  DataConfig c;
  c.dir = "unused";
  c.tokenizer = TokenizerKind::kByte;
  return c;
}

// Every byte value once, then a few ASCII letters again so the order is not the bytes'.
std::string every_byte() {
  std::string s;
  for (int b = 0; b < 256; ++b) s += static_cast<char>(b);
  return s + "eee\n\n";
}

std::vector<int64_t> widen(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

TEST(ByteTokenizer, OneTokenPerByteAndNoEndOfLineToken) {
  const std::string text = "h\xC3\xA9\n";  // "hé" and a line end
  EXPECT_EQ(split_tokens(text, TokenizerKind::kByte, "s"), (Tokens{"h", "<0xC3>", "<0xA9>", "\n"}));
  EXPECT_EQ(count_tokens(text, TokenizerKind::kByte, "s"), 4);
  const Vocab vocab = build_vocab(text, byte_config(), "train.txt");
  EXPECT_FALSE(vocab.contains(kEosToken));
  EXPECT_EQ(encode(text, vocab, "s").size(), 4u);
}

TEST(ByteTokenizer, EveryByteRoundTripsIncludingInvalidUtf8) {
  const std::string text = every_byte();
  const Vocab vocab = build_vocab(text, byte_config(), "train.txt");
  EXPECT_EQ(vocab.size(), 257);  // <unk> and 256 bytes
  EncodeStats stats;
  const auto ids = encode(text, vocab, "train.txt", &stats);
  EXPECT_EQ(stats.tokens, static_cast<int64_t>(text.size()));
  EXPECT_EQ(stats.unknown, 0);
  EXPECT_EQ(decode(widen(ids), vocab), text);
  const std::string cut = "\xE5\xA4";  // the first two bytes of a three-byte character
  EXPECT_EQ(decode(widen(encode(cut, vocab, "valid.txt")), vocab), cut);
}

TEST(ByteTokenizer, VocabIsUnkThenFrequencyThenFirstOccurrence) {
  // b:3, a:2, \xFF:2 (a seen first), \n:1
  const Vocab vocab = build_vocab(
      "ba\xFF"
      "b\xFF"
      "ab\n",
      byte_config(), "train.txt");
  EXPECT_EQ(vocab.tokens(), (Tokens{"<unk>", "b", "a", "<0xFF>", "\n"}));
  EXPECT_EQ(vocab.kind(), TokenizerKind::kByte);
}

TEST(ByteTokenizer, UnseenBytesBecomeUnkAndAreCounted) {
  const Vocab vocab = build_vocab("ab", byte_config(), "train.txt");
  EncodeStats stats;
  const auto ids = encode("a\x80z", vocab, "valid.txt", &stats);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(stats.unknown, 2);
  EXPECT_EQ(decode(widen(ids), vocab), "a<unk><unk>");
}

TEST(ByteTokenizer, VocabJsonRoundTripsAndRejectsWhatIsNotAByte) {
  const Vocab vocab = build_vocab(every_byte(), byte_config(), "train.txt");
  EXPECT_EQ(Vocab::from_json(vocab.to_json(), "vocab.json"), vocab);
  for (const std::string bad : {"ab", "<0x41>", "<0xc3>", "<0xC3", "<0xZZ>", "\xC3\xA9"}) {
    auto j = vocab.to_json();
    j["tokens"].push_back(bad);
    const std::string message = testing::input_error([&] { Vocab::from_json(j, "vocab.json"); });
    EXPECT_TRUE(testing::contains(message, "vocab.json")) << bad << ": " << message;
    EXPECT_TRUE(testing::contains(message, "not a byte")) << bad << ": " << message;
  }
}

TEST(ByteTokenizer, ChunkedTokenizingAcceptsAnyBytesAndEqualsEncode) {
  std::string text;
  for (int i = 0; i < 400; ++i) text += every_byte();
  const Vocab vocab = build_vocab(text, byte_config(), "train.txt");
  TokenizeOptions options;
  options.chunk_bytes = 1000;  // many chunks, so the whole-text check runs
  options.threads = 2;
  options.progress = false;
  const TokenizedSplit split = tokenize_text(text, vocab, "train.txt", options);
  EXPECT_EQ(split.ids, encode(text, vocab, "train.txt"));
  DataConfig chars = byte_config();
  chars.tokenizer = TokenizerKind::kChar;
  EXPECT_FALSE(testing::input_error([&] { build_vocab(text, chars, "train.txt"); }).empty())
      << "the char tokenizer must still refuse invalid UTF-8";
}

TEST(ByteTokenizer, ReportsBitsPerCharacterLikeChar) {
  EXPECT_TRUE(reports_bpc("byte"));
  EXPECT_TRUE(reports_bpc("char"));
  EXPECT_FALSE(reports_bpc("word"));
  EXPECT_FALSE(reports_bpc("bpe"));
  EXPECT_FALSE(reports_bpc("no such tokenizer"));
}

}  // namespace
}  // namespace txl
