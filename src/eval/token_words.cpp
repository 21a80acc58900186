#include "txl/eval/token_words.h"

#include <algorithm>

#include "txl/data/text_scan.h"

namespace txl {

namespace {

constexpr std::string_view kPieceSpace = "\xE2\x96\x81";  // sentencepiece's ▁

// The byte a "<0xNN>" token stands for, or -1 when it is not one.
int byte_of(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = token[i];
    if (c >= '0' && c <= '9') {
      value = value * 16 + (c - '0');
    } else if (c >= 'A' && c <= 'F') {
      value = value * 16 + (c - 'A' + 10);
    } else {
      return -1;
    }
  }
  return value;
}

// The text a token stands for (token_words.h).
std::string token_text(const std::string& token, TokenizerKind kind) {
  if (token == kUnkToken) return token;
  if (token == kEosToken) return "\n";
  if (const int b = byte_of(token); b >= 0) return std::string(1, static_cast<char>(b));
  if (kind != TokenizerKind::kBpe && kind != TokenizerKind::kUnigram) return token;
  std::string text;
  for (size_t p = 0; p < token.size();) {
    if (token.compare(p, kPieceSpace.size(), kPieceSpace) == 0) {
      text += ' ';
      p += kPieceSpace.size();
    } else {
      text += token[p++];
    }
  }
  return text;
}

std::string trimmed(const std::string& s) {
  const auto first = std::find_if_not(s.begin(), s.end(), is_ascii_space);
  const auto last = std::find_if_not(s.rbegin(), s.rend(), is_ascii_space).base();
  return first < last ? std::string(first, last) : std::string();
}

}  // namespace

TokenWords token_words(const std::vector<int32_t>& ids, const Vocab& vocab) {
  TokenWords out;
  out.word_of.resize(ids.size());
  if (vocab.kind() == TokenizerKind::kWord) {
    for (size_t i = 0; i < ids.size(); ++i) {
      out.word_of[i] = static_cast<int64_t>(i);
      out.words.push_back(vocab.token(ids[i]));
    }
    return out;
  }
  std::vector<std::string> texts(static_cast<size_t>(vocab.size()));
  for (int64_t id = 0; id < vocab.size(); ++id)
    texts[static_cast<size_t>(id)] = token_text(vocab.token(id), vocab.kind());
  std::vector<std::string> words;  // each word's text, whitespace included
  std::vector<bool> has_text;      // per word: some non-whitespace seen
  bool after_space = false;        // the text so far ends in whitespace
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& t = texts[static_cast<size_t>(ids[i])];
    const bool leads_with_space = !t.empty() && is_ascii_space(t.front());
    // A word ends where whitespace follows its text: that whitespace starts the next word.
    if (words.empty() || (has_text.back() && (leads_with_space || after_space))) {
      words.emplace_back();
      has_text.push_back(false);
    }
    words.back() += t;
    if (std::any_of(t.begin(), t.end(), [](char c) { return !is_ascii_space(c); }))
      has_text.back() = true;
    if (!t.empty()) after_space = is_ascii_space(t.back());
    out.word_of[i] = static_cast<int64_t>(words.size()) - 1;
  }
  // Whitespace after the last word is that word's.
  if (words.size() > 1 && !has_text.back()) {
    const auto last = static_cast<int64_t>(words.size()) - 1;
    for (auto& w : out.word_of) w = w == last ? last - 1 : w;
    words.pop_back();
  }
  for (const auto& w : words) out.words.push_back(trimmed(w));
  return out;
}

}  // namespace txl
