// "byte": one token per byte of the file, '\n' included and no end-of-line token, as the
// Transformer-XL paper reads enwik8 and text8. The text need not be UTF-8 (a split cut
// from the Hutter Prize file may end inside a character). The vocabulary is <unk> and then
// every byte of the training split by descending frequency; a byte below 0x80 is its own
// one-character token, a byte from 0x80 is written "<0xNN>" (vocab.json holds UTF-8 only).
#include <spdlog/fmt/fmt.h>

#include <array>

#include "txl/data/text_scan.h"
#include "txl/data/tokenizers.h"

namespace txl {

namespace {

constexpr int kByteValues = 256;

std::string byte_token(unsigned char b) {
  return b < 0x80 ? std::string(1, static_cast<char>(b)) : fmt::format("<0x{:02X}>", b);
}

// The byte a token stands for, or -1 when it is not a byte token.
int token_byte(const std::string& t) {
  if (t.size() == 1)
    return static_cast<unsigned char>(t[0]) < 0x80 ? static_cast<unsigned char>(t[0]) : -1;
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    if (c >= '0' && c <= '9') {
      value = value * 16 + (c - '0');
    } else if (c >= 'A' && c <= 'F') {
      value = value * 16 + (c - 'A' + 10);
    } else {
      return -1;  // lower case is not the spelling byte_token writes
    }
  }
  return value >= 0x80 ? value : -1;
}

Vocab byte_build(std::string_view train_text, const DataConfig& /*config*/,
                 const std::string& /*source*/) {
  std::unordered_map<int, TokenCount> counts;
  std::array<int64_t, kByteValues> count{};
  std::array<size_t, kByteValues> first{};
  size_t order = 0;
  for (const char c : train_text) {
    const auto b = static_cast<unsigned char>(c);
    if (count[b]++ == 0) first[b] = order++;
  }
  for (int b = 0; b < kByteValues; ++b) {
    if (count[b] > 0) counts[b] = TokenCount{count[b], first[b]};
  }
  std::vector<std::string> tokens = {kUnkToken};
  for (const int b : rank_by_count(counts, 1))
    tokens.push_back(byte_token(static_cast<unsigned char>(b)));
  return Vocab(TokenizerKind::kByte, std::move(tokens));
}

std::vector<int32_t> byte_encode(std::string_view text, const Vocab& vocab,
                                 const std::string& /*source*/, EncodeStats* stats) {
  const auto unk = static_cast<int32_t>(vocab.unk_id());
  std::array<int32_t, kByteValues> id_of;
  id_of.fill(unk);
  for (int64_t id = 0; id < vocab.size(); ++id) {
    const int b = token_byte(vocab.token(id));
    if (b >= 0) id_of[static_cast<size_t>(b)] = static_cast<int32_t>(id);
  }
  std::vector<int32_t> ids(text.size());
  int64_t unknown = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int32_t id = id_of[static_cast<unsigned char>(text[i])];
    unknown += id == unk;
    ids[i] = id;
  }
  if (stats != nullptr) {
    stats->tokens = static_cast<int64_t>(ids.size());
    stats->unknown = unknown;
  }
  return ids;
}

// The bytes again; <unk> is written as the five characters "<unk>".
std::string byte_decode(const std::vector<int64_t>& ids, const Vocab& vocab) {
  std::string out;
  out.reserve(ids.size());
  for (const int64_t id : ids) {
    const std::string& t = vocab.token(id);
    const int b = token_byte(t);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out += t;
    }
  }
  return out;
}

std::vector<std::string> byte_split(std::string_view text, const std::string& /*source*/) {
  std::vector<std::string> tokens;
  tokens.reserve(text.size());
  for (const char c : text) tokens.push_back(byte_token(static_cast<unsigned char>(c)));
  return tokens;
}

int64_t byte_count(std::string_view text, const std::string& /*source*/) {
  return static_cast<int64_t>(text.size());
}

std::string byte_token_problem(const std::string& token, const std::string& /*source*/) {
  if (token == kUnkToken || token_byte(token) >= 0) return "";
  return "is not a byte (byte vocabulary: one ASCII character, or <0x80> to <0xFF> written "
         "in upper case)";
}

}  // namespace

const TokenizerDef& byte_tokenizer() {
  static const TokenizerDef def{
      TokenizerKind::kByte, false,       false,       true,       false,
      byte_build,           byte_encode, byte_decode, byte_split, byte_count,
      byte_token_problem};
  return def;
}

}  // namespace txl
