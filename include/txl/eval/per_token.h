// txl eval --per-token FILE: one row per scored token, in text order, for each length and
// document (issue 57, item 2): what psycholinguistics and error analysis read, and what every
// perplexity txl prints is the sum of.
//
// FILE.tsv: a header line, then tab-separated
//   length  document  index  token  id  nll  bits  context  unk  word_index  word  word_nll
// FILE.jsonl: one object a line with the same keys. `index` is the token's place in its
// document's token sequence (the first token is never scored: nothing precedes it), `token` its
// text (in TSV with \\, \t, \n, \r escaped), `nll` in nats, `bits` the same in bits, `context`
// the tokens it was conditioned on, `unk` 1 where the text's token was not in the vocabulary.
// `word_index` and `word` are the word of the document the token belongs to (token_words.h:
// the token itself for a word run; for char, byte and subword runs the whitespace-delimited
// word, the whitespace before it included), `word_nll` the word's surprisal: the sum of its
// scored tokens' NLL in nats, on the word's last scored token only (empty in TSV, null in
// JSONL on the others), so the column adds up to the total as `nll` does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/data/vocab.h"
#include "txl/eval/evaluate.h"

namespace txl {

struct PerTokenScores {
  int64_t length = 0;
  std::string document;  // the --text file, or the split's name
  const std::vector<int32_t>* ids = nullptr;
  TokenScores scores;
};

// The file's format from its extension: InputError naming --per-token for another.
void check_per_token_path(const std::string& path);

// Rows of every scored token (NaN entries, never scored, are left out); written atomically.
void write_per_token(const std::string& path, const Vocab& vocab,
                     const std::vector<PerTokenScores>& scores);

}  // namespace txl
