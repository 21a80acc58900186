// Walking a text by code points and by whitespace-separated words, and ranking counted
// tokens: the pieces the char and word tokenizers are made of.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "txl/util/error.h"
#include "txl/util/utf8.h"

namespace txl {

// ASCII whitespace only: the word tokenizer must not depend on the locale. '\r' is here so
// that CRLF files tokenize like LF files.
inline bool is_ascii_space(char c) {
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

// Chunks of about `target` bytes that end right after a '\n' (the last one at the end).
inline std::vector<std::string_view> line_chunks(std::string_view text, size_t target) {
  std::vector<std::string_view> chunks;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + target);
    if (end < text.size()) {
      const size_t newline = text.find('\n', end);
      end = newline == std::string_view::npos ? text.size() : newline + 1;
    }
    chunks.push_back(text.substr(start, end - start));
    start = end;
  }
  return chunks;
}

// Calls f(line) for every line without its '\n'; a last line without '\n' is a line too.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    f(text.substr(line_start, line_end - line_start));
    line_start = line_end + 1;
  }
}

// Calls f(word) for every whitespace-separated word and f(eos) at the end of every line.
// The text must already be checked as UTF-8.
template <class F>
void for_each_word(std::string_view text, std::string_view eos, F&& f) {
  for_each_line(text, [&](std::string_view line) {
    size_t p = 0;
    while (p < line.size()) {
      while (p < line.size() && is_ascii_space(line[p])) ++p;
      if (p == line.size()) break;
      const size_t word_start = p;
      while (p < line.size() && !is_ascii_space(line[p])) ++p;
      f(line.substr(word_start, p - word_start));
    }
    f(eos);
  });
}

// Words plus one <eos> per line (what for_each_word visits); invalid UTF-8 throws.
inline int64_t count_words_and_line_ends(std::string_view text, const std::string& source) {
  check_utf8(text, source);
  int64_t n = 0;
  for_each_word(text, "", [&](std::string_view) { ++n; });
  return n;
}

// What every vocabulary requires of a token: "is empty", "is not valid UTF-8", or "".
inline std::string utf8_token_problem(const std::string& token, const std::string& source) {
  if (token.empty()) return "is empty";
  try {
    check_utf8(token, source);
  } catch (const InputError&) {
    return "is not valid UTF-8";
  }
  return "";
}

struct TokenCount {
  int64_t count = 0;
  size_t first = 0;  // order of first occurrence: the tie-break that makes ids deterministic
};

// The keys with count >= min_freq, by descending count, then first occurrence.
template <class Key>
std::vector<Key> rank_by_count(const std::unordered_map<Key, TokenCount>& counts,
                               int64_t min_freq) {
  std::vector<std::pair<Key, TokenCount>> items;
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

// The same rule for counts kept densely by index, where the index is the order of first
// occurrence (data/word_table.h): indices with counts[i] >= min_freq, by descending count,
// ties by index.
inline std::vector<int32_t> rank_by_count(const std::vector<int64_t>& counts, int64_t min_freq) {
  std::vector<int32_t> ranked;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] >= min_freq) ranked.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) {
    return counts[static_cast<size_t>(a)] > counts[static_cast<size_t>(b)];
  });
  return ranked;
}

}  // namespace txl
