// Tokenizing a whole split: long texts are cut into chunks of whole lines and encoded on
// several threads, with a progress line on stderr every few seconds. The ids are exactly
// encode()'s (every tokenizer works line by line), which the tests check.
#pragma once

#include <string>
#include <string_view>

#include "txl/data/token_cache.h"
#include "txl/data/vocab.h"

namespace txl {

struct TokenizeOptions {
  size_t chunk_bytes = size_t{4} << 20;  // texts up to this size are one chunk, one thread
  int threads = 0;                       // 0: every core
  bool progress = true;                  // stderr lines once the work takes a few seconds
};

TokenizedSplit tokenize_text(std::string_view text, const Vocab& vocab, const std::string& source,
                             const TokenizeOptions& options = {});

}  // namespace txl
