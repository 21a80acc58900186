// The tokenizer table: one entry per data.tokenizer value, each defined in its own file
// under src/data/tokenizers/. The free functions of tokenizer.h and the vocabulary checks
// dispatch through it, so a new tokenizer is one file and one line in the table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/tokenizer.h"
#include "txl/data/vocab.h"

namespace txl {

struct TokenizerDef {
  TokenizerKind kind;
  // Line ends are <eos> tokens (the text's '\n' is not a token of its own).
  bool eos_per_line = false;
  // The vocabulary is a sentencepiece model (vocab.h: Vocab::subword()).
  bool subword = false;
  // A token is one character (char) or one byte (byte): bits per token are what the field
  // calls bits per character, and the tables say so.
  bool per_symbol = false;
  // The text must be valid UTF-8 (every kind but byte, which reads any file).
  bool reads_utf8 = true;
  // Builds the vocabulary from the training split (tokenizer.h: build_vocab).
  Vocab (*build)(std::string_view train_text, const DataConfig& config, const std::string& source);
  // Text -> ids; fills stats->tokens and stats->unknown when stats is not null.
  std::vector<int32_t> (*encode)(std::string_view text, const Vocab& vocab,
                                 const std::string& source, EncodeStats* stats);
  std::string (*decode)(const std::vector<int64_t>& ids, const Vocab& vocab);
  // The token strings of a text, without a vocabulary (tokenizer.h: split_tokens).
  std::vector<std::string> (*split)(std::string_view text, const std::string& source);
  // At least this many tokens (exactly, where the count needs no vocabulary): the corpus
  // check before a run directory exists.
  int64_t (*count)(std::string_view text, const std::string& source);
  // "" when a vocabulary of this kind may hold `token` (vocab.json checks), else why not.
  std::string (*token_problem)(const std::string& token, const std::string& source);
};

const TokenizerDef& tokenizer_def(TokenizerKind kind);

// Whether the data.tokenizer called `name` is per_symbol (false for an unknown name): the
// reports, which know the tokenizer by name, add a bpc column where it is.
bool reports_bpc(const std::string& name);

// The definitions, one per file.
const TokenizerDef& char_tokenizer();
const TokenizerDef& byte_tokenizer();
const TokenizerDef& word_tokenizer();
const TokenizerDef& bpe_tokenizer();
const TokenizerDef& unigram_tokenizer();

}  // namespace txl
