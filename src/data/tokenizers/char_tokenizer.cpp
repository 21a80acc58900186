// "char": one token per Unicode code point, '\n' included; the vocabulary is <unk> and then
// every code point of the training split by descending frequency.
#include <array>
#include <unordered_map>

#include "txl/data/text_scan.h"
#include "txl/data/tokenizers.h"
#include "txl/util/error.h"

namespace txl {

namespace {

Vocab char_build(std::string_view train_text, const DataConfig& /*config*/,
                 const std::string& source) {
  std::unordered_map<char32_t, TokenCount> counts;
  size_t order = 0;
  for_each_code_point(train_text, source, [&](char32_t cp, std::string_view) {
    TokenCount& c = counts[cp];
    if (c.count++ == 0) c.first = order++;
  });
  std::vector<std::string> tokens = {kUnkToken};
  for (char32_t cp : rank_by_count(counts, 1)) {
    std::string t;
    append_utf8(t, cp);
    tokens.push_back(std::move(t));
  }
  return Vocab(TokenizerKind::kChar, std::move(tokens));
}

std::vector<int32_t> char_encode(std::string_view text, const Vocab& vocab,
                                 const std::string& source, EncodeStats* stats) {
  const auto unk = static_cast<int32_t>(vocab.unk_id());
  // Most corpora are mostly ASCII: a table serves those, a hash map the rest.
  std::array<int32_t, 128> ascii;
  ascii.fill(unk);
  std::unordered_map<char32_t, int32_t> other;
  for (int64_t id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab.token(id);
    if (t == kUnkToken || t.empty()) continue;
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

std::string char_decode(const std::vector<int64_t>& ids, const Vocab& vocab) {
  std::string out;
  for (int64_t id : ids) out += vocab.token(id);
  return out;
}

std::vector<std::string> char_split(std::string_view text, const std::string& source) {
  std::vector<std::string> tokens;
  for_each_code_point(text, source,
                      [&](char32_t, std::string_view bytes) { tokens.emplace_back(bytes); });
  return tokens;
}

int64_t char_count(std::string_view text, const std::string& source) {
  int64_t n = 0;
  for_each_code_point(text, source, [&](char32_t, std::string_view) { ++n; });
  return n;
}

std::string char_token_problem(const std::string& token, const std::string& source) {
  if (token == kUnkToken) return "";
  const std::string problem = utf8_token_problem(token, source);
  if (!problem.empty()) return problem;
  size_t pos = 0;
  next_code_point(token, &pos, source);
  return pos == token.size() ? "" : "is not a single code point (char vocabulary)";
}

}  // namespace

const TokenizerDef& char_tokenizer() {
  static const TokenizerDef def{
      TokenizerKind::kChar, false,       false,       true,       true,
      char_build,           char_encode, char_decode, char_split, char_count,
      char_token_problem};
  return def;
}

}  // namespace txl
