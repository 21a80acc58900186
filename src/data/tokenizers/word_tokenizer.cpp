// "word": whitespace-separated words with <eos> at every line end (the PTB / WikiText
// convention); the vocabulary is <unk>, <eos>, then the training words by descending
// frequency, cut by data.min_freq and data.max_vocab.
#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "txl/data/text_scan.h"
#include "txl/data/tokenizers.h"
#include "txl/data/word_table.h"
#include "txl/util/error.h"

namespace txl {

namespace {

constexpr std::string_view kUnk = kUnkToken;
constexpr std::string_view kEos = kEosToken;
// Training splits up to this size are counted on one thread.
constexpr size_t kOneThreadBytes = size_t{4} << 20;

// The words of a text, numbered by first occurrence, and how often each occurs.
struct WordCounts {
  WordTable words;
  std::vector<int64_t> counts;  // by word index

  void add(const WordTable::Key& word, int64_t n) {
    const auto i = static_cast<size_t>(words.add(word));
    if (i == counts.size()) counts.push_back(0);
    counts[i] += n;
  }
};

WordCounts count_words(std::string_view text) {
  WordCounts c;
  Lookahead ahead(c.words, [&](const WordTable::Key& key) { c.add(key, 1); });
  for_each_word(text, kEos, [&](std::string_view word) {
    // A literal <unk> (PTB has them) or <eos> in the text is the special, not a new word.
    if (word != kUnk && word != kEos) ahead.push(word);
  });
  ahead.flush();
  return c;
}

// count_words over parts of whole lines on every core, merged in text order: a word's index
// is its first occurrence in the whole text, as on one thread.
WordCounts count_words_parallel(std::string_view text) {
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  if (text.size() <= kOneThreadBytes || threads == 1) return count_words(text);
  const auto parts = line_chunks(text, text.size() / threads + 1);
  std::vector<WordCounts> counted(parts.size());
  std::vector<std::thread> workers;
  for (size_t i = 0; i < parts.size(); ++i) {
    workers.emplace_back([&, i] { counted[i] = count_words(parts[i]); });
  }
  for (auto& w : workers) w.join();
  WordCounts all = std::move(counted[0]);
  for (size_t p = 1; p < counted.size(); ++p) {
    for (size_t i = 0; i < counted[p].counts.size(); ++i) {
      all.add(WordTable::key(counted[p].words.word(static_cast<int32_t>(i))), counted[p].counts[i]);
    }
  }
  return all;
}

Vocab word_build(std::string_view train_text, const DataConfig& config, const std::string& source) {
  check_utf8(train_text, source);
  std::vector<std::string> tokens = {kUnkToken, kEosToken};
  const WordCounts c = count_words_parallel(train_text);
  std::vector<int32_t> ranked = rank_by_count(c.counts, std::max<int64_t>(config.min_freq, 1));
  if (config.max_vocab > 0) {
    const auto room = static_cast<size_t>(
        std::max<int64_t>(config.max_vocab - static_cast<int64_t>(tokens.size()), 0));
    if (ranked.size() > room) ranked.resize(room);
  }
  for (const int32_t i : ranked) tokens.emplace_back(c.words.word(i));
  return Vocab(TokenizerKind::kWord, std::move(tokens));
}

// The vocabulary's tokens in a WordTable whose indices are the ids. A long split is encoded
// chunk by chunk, so the last table is kept (keyed by the vocabulary's checksum) rather
// than built again for every chunk.
std::shared_ptr<const WordTable> id_table(const Vocab& vocab) {
  static std::mutex mutex;
  static std::shared_ptr<const WordTable> table;
  static uint64_t table_checksum = 0;
  const uint64_t checksum = vocab.checksum();
  const std::lock_guard<std::mutex> lock(mutex);
  if (table == nullptr || table_checksum != checksum || table->size() != size_t(vocab.size())) {
    auto built = std::make_shared<WordTable>(static_cast<size_t>(vocab.size()));
    for (const auto& token : vocab.tokens()) built->add(token);
    table = std::move(built);
    table_checksum = checksum;
  }
  return table;
}

std::vector<int32_t> word_encode(std::string_view text, const Vocab& vocab,
                                 const std::string& source, EncodeStats* stats) {
  check_utf8(text, source);
  const auto unk = static_cast<int32_t>(vocab.unk_id());
  const auto table = id_table(vocab);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4);
  int64_t unknown = 0;
  Lookahead ahead(*table, [&](const WordTable::Key& key) {
    const int32_t id = table->find(key);
    ids.push_back(id >= 0 ? id : unk);
    unknown += id < 0;
  });
  for_each_word(text, kEos, [&](std::string_view word) { ahead.push(word); });
  ahead.flush();
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
      TokenizerKind::kWord, true,        false,       false,      true,
      word_build,           word_encode, word_decode, word_split, count_words_and_line_ends,
      word_token_problem};
  return def;
}

}  // namespace txl
