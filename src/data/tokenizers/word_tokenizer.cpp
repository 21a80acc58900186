// "word": whitespace-separated words with <eos> at every line end (the PTB / WikiText
// convention); the vocabulary is <unk>, <eos>, then the training words by descending
// frequency, cut by data.min_freq and data.max_vocab.
#include <unordered_map>

#include "txl/data/text_scan.h"
#include "txl/data/tokenizers.h"
#include "txl/util/error.h"

namespace txl {

namespace {

Vocab word_build(std::string_view train_text, const DataConfig& config, const std::string& source) {
  check_utf8(train_text, source);
  std::vector<std::string> tokens = {kUnkToken, kEosToken};
  std::unordered_map<std::string_view, TokenCount> counts;
  size_t order = 0;
  for_each_word(train_text, kEosToken, [&](std::string_view word) {
    // A literal <unk> (PTB has them) or <eos> in the text is the special, not a new word.
    if (word == kUnkToken || word == kEosToken) return;
    TokenCount& c = counts[word];
    if (c.count++ == 0) c.first = order++;
  });
  std::vector<std::string_view> ranked =
      rank_by_count(counts, std::max<int64_t>(config.min_freq, 1));
  if (config.max_vocab > 0) {
    const auto room = static_cast<size_t>(
        std::max<int64_t>(config.max_vocab - static_cast<int64_t>(tokens.size()), 0));
    if (ranked.size() > room) ranked.resize(room);
  }
  for (std::string_view w : ranked) tokens.emplace_back(w);
  return Vocab(TokenizerKind::kWord, std::move(tokens));
}

std::vector<int32_t> word_encode(std::string_view text, const Vocab& vocab,
                                 const std::string& source, EncodeStats* stats) {
  check_utf8(text, source);
  const auto unk = static_cast<int32_t>(vocab.unk_id());
  // Views into the vocabulary's own strings, so lookups need no std::string per word.
  std::unordered_map<std::string_view, int32_t> index;
  index.reserve(static_cast<size_t>(vocab.size()));
  for (int64_t id = 0; id < vocab.size(); ++id) {
    index.emplace(vocab.token(id), static_cast<int32_t>(id));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4);
  int64_t unknown = 0;
  for_each_word(text, kEosToken, [&](std::string_view word) {
    const auto it = index.find(word);
    if (it != index.end()) {
      ids.push_back(it->second);
    } else {
      ids.push_back(unk);
      ++unknown;
    }
  });
  if (stats != nullptr) {
    stats->tokens = static_cast<int64_t>(ids.size());
    stats->unknown = unknown;
  }
  return ids;
}

// Tokens joined by spaces; <eos> becomes "\n".
std::string word_decode(const std::vector<int64_t>& ids, const Vocab& vocab) {
  std::string out;
  bool line_start = true;
  for (int64_t id : ids) {
    const std::string& t = vocab.token(id);
    if (t == kEosToken) {
      out.push_back('\n');
      line_start = true;
    } else {
      if (!line_start) out.push_back(' ');
      out += t;
      line_start = false;
    }
  }
  return out;
}

std::vector<std::string> word_split(std::string_view text, const std::string& source) {
  check_utf8(text, source);
  std::vector<std::string> tokens;
  for_each_word(text, kEosToken, [&](std::string_view word) { tokens.emplace_back(word); });
  return tokens;
}

std::string word_token_problem(const std::string& token, const std::string& source) {
  if (token == kUnkToken || token == kEosToken) return "";
  const std::string problem = utf8_token_problem(token, source);
  if (!problem.empty()) return problem;
  for (char c : token) {
    if (is_ascii_space(c)) return "contains whitespace (word vocabulary)";
  }
  return "";
}

}  // namespace

const TokenizerDef& word_tokenizer() {
  static const TokenizerDef def{
      TokenizerKind::kWord, true,        false,      word_build,
      word_encode,          word_decode, word_split, count_words_and_line_ends,
      word_token_problem};
  return def;
}

}  // namespace txl
