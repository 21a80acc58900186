#include "txl/data/tokenizer.h"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "txl/util/utf8.h"

namespace txl {

namespace {

constexpr std::string_view kUnk = kUnkToken;
constexpr std::string_view kEos = kEosToken;

// ASCII whitespace only: the word tokenizer must not depend on the locale. '\r' is here so
// that CRLF files tokenize like LF files.
bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

// Calls f(code_point, bytes_of_that_code_point) for every code point; invalid UTF-8 throws.
template <class F>
void for_each_code_point(std::string_view text, const std::string& source, F&& f) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const auto b = static_cast<unsigned char>(text[pos]);
    char32_t cp;
    if (b < 0x80) {
      cp = b;
      ++pos;
    } else {
      cp = next_code_point(text, &pos, source);
    }
    f(cp, text.substr(start, pos - start));
  }
}

// Calls f(word) for every whitespace-separated word and f(kEos) at the end of every line;
// a last line without '\n' is a line too. The text must already be checked as UTF-8.
template <class F>
void for_each_word(std::string_view text, F&& f) {
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    size_t p = line_start;
    while (p < line_end) {
      while (p < line_end && is_ascii_space(text[p])) ++p;
      if (p == line_end) break;
      const size_t word_start = p;
      while (p < line_end && !is_ascii_space(text[p])) ++p;
      f(text.substr(word_start, p - word_start));
    }
    f(kEos);
    line_start = line_end + 1;
  }
}

struct Count {
  int64_t count = 0;
  size_t first = 0;  // order of first occurrence: the tie-break that makes ids deterministic
};

// Descending frequency, then first occurrence.
template <class Key>
std::vector<Key> rank(const std::unordered_map<Key, Count>& counts, int64_t min_freq) {
  std::vector<std::pair<Key, Count>> items;
  items.reserve(counts.size());
  for (const auto& kv : counts) {
    if (kv.second.count >= min_freq) items.push_back(kv);
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    if (a.second.count != b.second.count) return a.second.count > b.second.count;
    return a.second.first < b.second.first;
  });
  std::vector<Key> keys;
  keys.reserve(items.size());
  for (const auto& kv : items) keys.push_back(kv.first);
  return keys;
}

void check_vocab_fits(const Vocab& vocab) {
  if (vocab.size() > std::numeric_limits<int32_t>::max()) {
    throw std::length_error("vocabulary too large for int32 ids");
  }
}

std::vector<int32_t> encode_chars(std::string_view text, const Vocab& vocab,
                                  const std::string& source, EncodeStats* stats) {
  const auto unk = static_cast<int32_t>(vocab.unk_id());
  // Most corpora are mostly ASCII: a table serves those, a hash map the rest.
  std::array<int32_t, 128> ascii;
  ascii.fill(unk);
  std::unordered_map<char32_t, int32_t> other;
  for (int64_t id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab.token(id);
    if (t == kUnk || t.empty()) continue;
    size_t pos = 0;
    const char32_t cp = next_code_point(t, &pos, "vocabulary");
    if (pos != t.size()) continue;  // not a single code point: the char tokenizer never emits it
    if (cp < 128) {
      ascii[cp] = static_cast<int32_t>(id);
    } else {
      other.emplace(cp, static_cast<int32_t>(id));
    }
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  int64_t unknown = 0;
  for_each_code_point(text, source, [&](char32_t cp, std::string_view) {
    int32_t id = unk;
    if (cp < 128) {
      id = ascii[cp];
    } else {
      const auto it = other.find(cp);
      if (it != other.end()) id = it->second;
    }
    if (id == unk) ++unknown;
    ids.push_back(id);
  });
  if (stats != nullptr) {
    stats->tokens = static_cast<int64_t>(ids.size());
    stats->unknown = unknown;
  }
  return ids;
}

std::vector<int32_t> encode_words(std::string_view text, const Vocab& vocab,
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
  for_each_word(text, [&](std::string_view word) {
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

}  // namespace

std::vector<std::string> split_tokens(std::string_view text, TokenizerKind kind,
                                      const std::string& source) {
  std::vector<std::string> tokens;
  if (kind == TokenizerKind::kChar) {
    for_each_code_point(text, source,
                        [&](char32_t, std::string_view bytes) { tokens.emplace_back(bytes); });
  } else {
    check_utf8(text, source);
    for_each_word(text, [&](std::string_view word) { tokens.emplace_back(word); });
  }
  return tokens;
}

int64_t count_tokens(std::string_view text, TokenizerKind kind, const std::string& source) {
  int64_t n = 0;
  if (kind == TokenizerKind::kChar) {
    for_each_code_point(text, source, [&](char32_t, std::string_view) { ++n; });
  } else {
    check_utf8(text, source);
    for_each_word(text, [&](std::string_view) { ++n; });
  }
  return n;
}

Vocab build_vocab(std::string_view train_text, const DataConfig& config,
                  const std::string& source) {
  std::vector<std::string> tokens = {kUnkToken};
  size_t order = 0;
  if (config.tokenizer == TokenizerKind::kChar) {
    std::unordered_map<char32_t, Count> counts;
    for_each_code_point(train_text, source, [&](char32_t cp, std::string_view) {
      Count& c = counts[cp];
      if (c.count++ == 0) c.first = order++;
    });
    for (char32_t cp : rank(counts, 1)) {
      std::string t;
      append_utf8(t, cp);
      tokens.push_back(std::move(t));
    }
  } else {
    check_utf8(train_text, source);
    tokens.push_back(kEosToken);
    std::unordered_map<std::string_view, Count> counts;
    for_each_word(train_text, [&](std::string_view word) {
      // A literal <unk> (PTB has them) or <eos> in the text is the special, not a new word.
      if (word == kUnk || word == kEos) return;
      Count& c = counts[word];
      if (c.count++ == 0) c.first = order++;
    });
    std::vector<std::string_view> ranked = rank(counts, std::max<int64_t>(config.min_freq, 1));
    if (config.max_vocab > 0) {
      const auto room = static_cast<size_t>(
          std::max<int64_t>(config.max_vocab - static_cast<int64_t>(tokens.size()), 0));
      if (ranked.size() > room) ranked.resize(room);
    }
    for (std::string_view w : ranked) tokens.emplace_back(w);
  }
  return Vocab(config.tokenizer, std::move(tokens));
}

std::vector<int32_t> encode(std::string_view text, const Vocab& vocab, const std::string& source,
                            EncodeStats* stats) {
  check_vocab_fits(vocab);
  return vocab.kind() == TokenizerKind::kChar ? encode_chars(text, vocab, source, stats)
                                              : encode_words(text, vocab, source, stats);
}

std::string decode(const std::vector<int64_t>& ids, const Vocab& vocab) {
  std::string out;
  if (vocab.kind() == TokenizerKind::kChar) {
    for (int64_t id : ids) out += vocab.token(id);
    return out;
  }
  bool line_start = true;
  for (int64_t id : ids) {
    const std::string& t = vocab.token(id);
    if (t == kEos) {
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

}  // namespace txl
