// Which word of its document each token belongs to (txl eval --per-token's word columns), so
// that a subword, byte or character run's surprisal can be read per word.
//
// Word runs: the word is the token (<eos> included). Char, byte and subword runs: a word is a
// maximal stretch of non-whitespace text (ASCII whitespace, as the word tokenizer splits)
// together with the whitespace before it, as sentencepiece's pieces carry the space before a
// word ("▁the"): a space, tab or line end (a byte or char run's '\n', a subword run's <eos>)
// belongs to the word that follows it, and whitespace after a document's last word to that
// word. A token's text is what it stands for: its character, its byte (<0xNN>: a byte run's
// and sentencepiece's byte fallback), a piece with ▁ as a space; <unk> is text of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/data/vocab.h"

namespace txl {

struct TokenWords {
  std::vector<int64_t> word_of;    // per token: its word's number in the document, from 0
  std::vector<std::string> words;  // per word: its text, the whitespace around it left out
};

TokenWords token_words(const std::vector<int32_t>& ids, const Vocab& vocab);

}  // namespace txl
