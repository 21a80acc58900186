#include "txl/data/tokenizer.h"

#include <limits>
#include <stdexcept>

#include "txl/data/tokenizers.h"

namespace txl {

namespace {

// One line per data.tokenizer value.
const std::vector<const TokenizerDef*>& table() {
  static const std::vector<const TokenizerDef*> defs = {&char_tokenizer(), &byte_tokenizer(),
                                                        &word_tokenizer(), &bpe_tokenizer(),
                                                        &unigram_tokenizer()};
  return defs;
}

void check_vocab_fits(const Vocab& vocab) {
  if (vocab.size() > std::numeric_limits<int32_t>::max()) {
    throw std::length_error("vocabulary too large for int32 ids");
  }
}

}  // namespace

const TokenizerDef& tokenizer_def(TokenizerKind kind) {
  for (const TokenizerDef* def : table()) {
    if (def->kind == kind) return *def;
  }
  throw std::logic_error("tokenizer " + to_string(kind) + " has no entry in the tokenizer table");
}

bool reports_bpc(const std::string& name) {
  for (const TokenizerDef* def : table()) {
    if (to_string(def->kind) == name) return def->per_symbol;
  }
  return false;
}

std::vector<std::string> split_tokens(std::string_view text, TokenizerKind kind,
                                      const std::string& source) {
  return tokenizer_def(kind).split(text, source);
}

int64_t count_tokens(std::string_view text, TokenizerKind kind, const std::string& source) {
  return tokenizer_def(kind).count(text, source);
}

Vocab build_vocab(std::string_view train_text, const DataConfig& config,
                  const std::string& source) {
  return tokenizer_def(config.tokenizer).build(train_text, config, source);
}

std::vector<int32_t> encode(std::string_view text, const Vocab& vocab, const std::string& source,
                            EncodeStats* stats) {
  check_vocab_fits(vocab);
  return tokenizer_def(vocab.kind()).encode(text, vocab, source, stats);
}

std::string decode(const std::vector<int64_t>& ids, const Vocab& vocab) {
  return tokenizer_def(vocab.kind()).decode(ids, vocab);
}

}  // namespace txl
