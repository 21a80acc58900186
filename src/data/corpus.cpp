#include "txl/data/corpus.h"

#include <spdlog/fmt/fmt.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>

#include "txl/data/subword_model.h"
#include "txl/data/text_scan.h"
#include "txl/data/token_cache.h"
#include "txl/data/tokenize_text.h"
#include "txl/data/tokenizer.h"
#include "txl/data/tokenizers.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/text.h"
#include "txl/util/utf8.h"

namespace txl {

namespace {

// A split needs two tokens: training predicts token t+1 from token t.
constexpr int64_t kMinSplitTokens = 2;

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void check_dir(const std::string& dir) {
  if (dir.empty()) throw InputError("data.dir is not set: it must name a corpus folder");
  if (!path_exists(dir)) {
    throw InputError("data.dir: " + dir + " does not exist (expected a folder with train.txt, " +
                     "valid.txt and test.txt)");
  }
  if (!is_directory(dir)) throw InputError("data.dir: " + dir + " is not a directory");
}

// Reads one split of a checked directory and rejects an empty or whitespace-only file.
std::string read_split(const std::string& dir, const std::string& split) {
  const std::string path = split_path(dir, split);
  if (!path_exists(path)) {
    throw InputError(path + ": missing; a corpus folder needs train.txt, valid.txt and test.txt");
  }
  std::string text = read_text_file(path);
  if (text.empty()) throw InputError(path + ": the " + split + " split is empty");
  if (std::all_of(text.begin(), text.end(), is_ascii_space)) {
    throw InputError(path + ": the " + split + " split holds only whitespace");
  }
  return text;
}

void check_token_count(int64_t n, const std::string& path, TokenizerKind kind) {
  if (n < kMinSplitTokens) {
    throw InputError(path + ": " + std::to_string(n) + " " + to_string(kind) +
                     " token(s), at least " + std::to_string(kMinSplitTokens) + " are needed");
  }
}

const char* const kSplits[] = {"train", "valid", "test"};

void cache_warning(const std::string& what) {
  fmt::print(stderr, "warning: token cache: {}\n", what);
}

// The vocabulary of a training split (`hash`: the XXH64 of its text): from the token cache,
// or built (and cached).
Vocab vocab_for(const std::string& train_text, uint64_t hash, const DataConfig& config,
                const std::string& path, TokenCacheWrites* writes) {
  const std::string cache = token_cache_dir();
  if (!cache.empty()) {
    std::string problem;
    if (auto vocab = read_cached_vocab(cache, hash, config, &problem)) return std::move(*vocab);
    if (!problem.empty()) cache_warning(problem + "; building the vocabulary again");
  }
  const bool subword = tokenizer_def(config.tokenizer).subword;
  const auto start = std::chrono::steady_clock::now();
  if (subword) {
    fmt::print(stderr, "training the {} tokenizer ({} pieces) on {} ({:.1f} MB)...\n",
               to_string(config.tokenizer), config.vocab_size, path, train_text.size() * 1e-6);
  }
  Vocab vocab = build_vocab(train_text, config, path);
  if (subword) {
    fmt::print(stderr, "trained the {} tokenizer in {:.1f} s\n", to_string(config.tokenizer),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (!cache.empty()) {
    TokenCacheWrites now;
    (writes != nullptr ? *writes : now).add_vocab(cache, hash, config, vocab);
    now.commit();
  }
  return vocab;
}

// A split's ids (`hash`: the XXH64 of its text): from the token cache, or tokenized (and
// cached).
std::vector<int32_t> tokenize_split(const std::string& text, uint64_t hash, const Vocab& vocab,
                                    const std::string& path, EncodeStats* stats,
                                    TokenCacheWrites* writes) {
  const std::string cache = token_cache_dir();
  const SplitKey key{hash, vocab.checksum()};
  std::optional<TokenizedSplit> split;
  if (!cache.empty()) {
    std::string problem;
    split = read_cached_ids(cache, key, &problem);
    if (!problem.empty()) cache_warning(problem + "; tokenizing " + path + " again");
  }
  if (!split) {
    split = tokenize_text(text, vocab, path);
    if (!cache.empty()) {
      TokenCacheWrites now;
      (writes != nullptr ? *writes : now).add_ids(cache, key, *split);
      now.commit();
    }
  }
  if (stats != nullptr) {
    stats->tokens = static_cast<int64_t>(split->ids.size());
    stats->unknown = split->unknown;
    stats->bytes = static_cast<int64_t>(text.size());
  }
  return std::move(split->ids);
}

}  // namespace

std::string read_text_file(const std::string& path) {
  return read_regular_file(path, "a text file");
}

std::string split_path(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "valid" && split != "test") {
    throw InputError("unknown split \"" + split + "\" (expected train, valid or test)");
  }
  if (!dir.empty() && dir.back() == '/') return dir + split + ".txt";
  return dir + "/" + split + ".txt";
}

void check_corpus_dir(const DataConfig& config) { check_corpus_dir(config, 0.0); }

namespace {

constexpr double kIdBytes = sizeof(int32_t);

// format_bytes, with kB below a megabyte (a tiny corpus' split is not "0 MB").
std::string read_size(double bytes) {
  return bytes < 1e6 ? fmt::format("{:.0f} kB", bytes / 1e3) : format_bytes(bytes);
}

[[noreturn]] void refuse_read(const std::string& path, const std::string& need,
                              double available_bytes) {
  throw InputError(fmt::format(
      "{}: {}, but only {} of memory is available to this process; use a smaller corpus (or a "
      "part of it), or a machine or TXL_MEMORY_LIMIT_MB with more memory",
      path, need, read_size(available_bytes)));
}

}  // namespace

CorpusReadNeed corpus_read_need(const std::vector<SplitSize>& splits) {
  CorpusReadNeed need;
  double kept = 0;  // the ids of the splits read before
  for (const SplitSize& split : splits) {
    const double ids = kIdBytes * static_cast<double>(split.tokens);
    // The text, the chunks' ids and the joined ids (tokenize_text.h).
    const double peak = kept + static_cast<double>(split.bytes) + 2 * ids;
    if (peak > need.bytes) {
      need.bytes = peak;
      need.peak = split.path;
      need.parts = fmt::format("{} of text and {} for the ids of its {} tokens, made twice",
                               read_size(static_cast<double>(split.bytes)), read_size(2 * ids),
                               split.tokens);
      if (kept > 0) need.parts += fmt::format(", beside {} of the splits before", read_size(kept));
    }
    kept += ids;
  }
  return need;
}

std::vector<SplitSize> check_corpus_dir(const DataConfig& config, double available_bytes) {
  if (tokenizer_def(config.tokenizer).subword && !subword_available()) {
    throw InputError("data.tokenizer: " + to_string(config.tokenizer) +
                     " needs sentencepiece, but " + subword_problem() +
                     " (build txl with libsentencepiece-dev installed)");
  }
  check_dir(config.dir);
  std::vector<SplitSize> sizes;
  for (const char* split : kSplits) {
    const std::string path = split_path(config.dir, split);
    struct stat st {};
    // The text is the first allocation: refused before it is made.
    if (available_bytes > 0 && ::stat(path.c_str(), &st) == 0 &&
        static_cast<double>(st.st_size) > available_bytes) {
      refuse_read(path,
                  fmt::format("reading its {} of text needs as much memory",
                              read_size(static_cast<double>(st.st_size))),
                  available_bytes);
    }
    const std::string text = read_split(config.dir, split);
    SplitSize size{path, static_cast<int64_t>(text.size()),
                   count_tokens(text, config.tokenizer, path)};
    check_token_count(size.tokens, path, config.tokenizer);
    // Subword pieces are not counted here: at most one a byte, and one a line.
    if (tokenizer_def(config.tokenizer).subword) size.tokens = size.bytes + 1;
    sizes.push_back(size);
  }
  const CorpusReadNeed need = corpus_read_need(sizes);
  if (available_bytes > 0 && need.bytes > available_bytes) {
    refuse_read(need.peak,
                fmt::format("reading and tokenizing the corpus needs about {} at its peak ({})",
                            read_size(need.bytes), need.parts),
                available_bytes);
  }
  return sizes;
}

Corpus load_corpus(const DataConfig& config, TokenCacheWrites* writes) {
  check_dir(config.dir);
  Corpus corpus;
  const std::string train_path = split_path(config.dir, "train");
  const std::string train_text = read_split(config.dir, "train");
  const uint64_t train_hash = xxh64(train_text.data(), train_text.size());  // keys both
  corpus.vocab = vocab_for(train_text, train_hash, config, train_path, writes);
  corpus.train = tokenize_split(train_text, train_hash, corpus.vocab, train_path, nullptr, writes);
  check_token_count(static_cast<int64_t>(corpus.train.size()), train_path, config.tokenizer);
  corpus.valid = load_split(config.dir, "valid", corpus.vocab, nullptr, writes);
  corpus.test = load_split(config.dir, "test", corpus.vocab, nullptr, writes);
  return corpus;
}

Corpus load_corpus_with_vocab(const DataConfig& config, Vocab vocab, int64_t* unknown,
                              TokenCacheWrites* writes) {
  if (vocab.kind() != config.tokenizer) {
    throw InputError("data.tokenizer \"" + to_string(config.tokenizer) + "\" cannot read a " +
                     to_string(vocab.kind()) + " vocabulary");
  }
  Corpus corpus;
  corpus.vocab = std::move(vocab);
  EncodeStats stats[3];
  corpus.train = load_split(config.dir, "train", corpus.vocab, &stats[0], writes);
  corpus.valid = load_split(config.dir, "valid", corpus.vocab, &stats[1], writes);
  corpus.test = load_split(config.dir, "test", corpus.vocab, &stats[2], writes);
  if (unknown) *unknown = stats[0].unknown + stats[1].unknown + stats[2].unknown;
  return corpus;
}

std::vector<int32_t> load_split(const std::string& dir, const std::string& split,
                                const Vocab& vocab, EncodeStats* stats, TokenCacheWrites* writes) {
  check_dir(dir);
  const std::string path = split_path(dir, split);
  const std::string text = read_split(dir, split);
  std::vector<int32_t> ids =
      tokenize_split(text, xxh64(text.data(), text.size()), vocab, path, stats, writes);
  check_token_count(static_cast<int64_t>(ids.size()), path, vocab.kind());
  return ids;
}

std::vector<int32_t> load_text(const std::string& path, const Vocab& vocab, EncodeStats* stats,
                               TokenCacheWrites* writes) {
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? "standard input (--text -)" : path;
  std::string text;
  if (from_stdin) {
    std::ostringstream in;
    in << std::cin.rdbuf();
    text = in.str();
  } else {
    text = read_regular_file(path, "a text file to score");
  }
  if (text.empty()) throw InputError(name + ": is empty; there is nothing to score");
  if (vocab.kind() != TokenizerKind::kByte) check_utf8(text, name);
  std::vector<int32_t> ids =
      tokenize_split(text, xxh64(text.data(), text.size()), vocab, name, stats, writes);
  if (ids.size() < 2) {
    throw InputError(fmt::format(
        "{}: {} {} token(s); scoring needs at least 2 (a token and the one that follows it)", name,
        ids.size(), to_string(vocab.kind())));
  }
  return ids;
}

}  // namespace txl
