// txl eval --per-token FILE: one row per scored token, in text order, for each length and
// document (issue 57, item 2): what psycholinguistics and error analysis read, and what every
// perplexity txl prints is the sum of.
//
// FILE.tsv: a header line, then tab-separated
//   length  document  index  token  id  nll  bits  context  unk
// FILE.jsonl: one object a line with the same keys. `index` is the token's place in its
// document's token sequence (the first token is never scored: nothing precedes it), `token` its
// text (in TSV with \\, \t, \n, \r escaped), `nll` in nats, `bits` the same in bits, `context`
// the tokens it was conditioned on, `unk` 1 where the text's token was not in the vocabulary.
// Not yet: the word a subword or byte token belongs to and the word's summed surprisal.
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
