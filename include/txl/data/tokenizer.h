// Tokenizers: "char" (one token per Unicode code point, newline included) and "word"
// (whitespace split, <eos> appended at each line end, as in the PTB/WikiText convention).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/vocab.h"

namespace txl {

struct EncodeStats {
  int64_t tokens = 0;
  int64_t unknown = 0;  // tokens mapped to <unk> that were not literally "<unk>" in the text
  int64_t bytes = 0;    // the text's UTF-8 bytes (filled by load_split, for bits per byte)
};

// bytes / tokens, or 0 when nothing was counted.
inline double bytes_per_token(const EncodeStats& s) {
  return s.tokens > 0 && s.bytes > 0 ? static_cast<double>(s.bytes) / s.tokens : 0.0;
}

// Splits text into token strings. char: invalid UTF-8 throws InputError naming `source`
// and the byte offset.
std::vector<std::string> split_tokens(std::string_view text, TokenizerKind kind,
                                      const std::string& source);

// The number of tokens split_tokens would return, without building them.
int64_t count_tokens(std::string_view text, TokenizerKind kind, const std::string& source);

// Builds a vocabulary from the training split only. Specials first (<unk>, and <eos> for
// word), then tokens by descending frequency, ties broken by first occurrence so the
// result is deterministic. data.min_freq and data.max_vocab apply to word vocabularies.
Vocab build_vocab(std::string_view train_text, const DataConfig& config, const std::string& source);

// Text -> ids with the given vocabulary (unknown tokens -> <unk>).
std::vector<int32_t> encode(std::string_view text, const Vocab& vocab, const std::string& source,
                            EncodeStats* stats = nullptr);

// Ids -> text. char: concatenation; word: tokens joined by spaces, <eos> becomes "\n".
std::string decode(const std::vector<int64_t>& ids, const Vocab& vocab);

}  // namespace txl
