// The token cache: tokenized splits (token ids) and the vocabularies built from training
// splits, kept on disk so a large corpus is tokenized once, whichever run, eval, compare or
// study reads it next.
//
// Where: $TXL_CACHE_DIR, else $XDG_CACHE_HOME/txl, else $HOME/.cache/txl (TXL_CACHE_DIR=off
// turns it off). Keys are contents, not names: a split's ids are keyed by the XXH64 of the
// split's bytes and the vocabulary's checksum; a vocabulary by the XXH64 of the training split
// and the data settings that shape it. An edited corpus therefore misses, never reads stale
// ids. Every ids file carries its key and the XXH64 of its ids, checked on every read (the
// file is memory-mapped); a damaged or foreign entry is reported, ignored and rebuilt.
// Writing is atomic; a cache that cannot be written costs a warning, not the run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/vocab.h"

namespace txl {

// The cache folder from the environment; "" when TXL_CACHE_DIR=off or no folder is known.
std::string token_cache_dir();

struct SplitKey {
  uint64_t text_xxh64 = 0;  // of the split file's bytes
  uint64_t vocab_checksum = 0;
};

struct TokenizedSplit {
  std::vector<int32_t> ids;
  int64_t unknown = 0;  // EncodeStats::unknown of the encoding that made them
};

// The cached ids of a split, or nullopt (absent, or damaged: then `problem` says why).
std::optional<TokenizedSplit> read_cached_ids(const std::string& cache_dir, const SplitKey& key,
                                              std::string* problem = nullptr);
// Stores ids atomically; returns "" or the reason it could not.
std::string write_cached_ids(const std::string& cache_dir, const SplitKey& key,
                             const TokenizedSplit& split);
// The file an entry lives in (for tests and messages).
std::string cached_ids_path(const std::string& cache_dir, const SplitKey& key);

// The same for the vocabulary built from a training split with these data settings.
std::optional<Vocab> read_cached_vocab(const std::string& cache_dir, uint64_t train_xxh64,
                                       const DataConfig& config, std::string* problem = nullptr);
std::string write_cached_vocab(const std::string& cache_dir, uint64_t train_xxh64,
                               const DataConfig& config, const Vocab& vocab);

// Cache entries a command made while loading, held back until it commits them: a command
// that refuses its input after loading (a segment longer than a training stream, a model or
// an evaluation too big for memory) then leaves the cache as it was. Ids are written at once
// to a pending file beside their entry (holding 400 MB of bytes in memory until the commit
// was the largest part of a first tokenizing's peak); commit() renames it into place, and
// without commit() the destructor removes it. A process killed in between leaves a
// "*.pending.PID" file in the cache, which nothing reads.
class TokenCacheWrites {
 public:
  TokenCacheWrites() = default;
  TokenCacheWrites(const TokenCacheWrites&) = delete;
  TokenCacheWrites& operator=(const TokenCacheWrites&) = delete;
  ~TokenCacheWrites();

  void add_ids(const std::string& cache_dir, const SplitKey& key, const TokenizedSplit& split);
  void add_vocab(const std::string& cache_dir, uint64_t train_xxh64, const DataConfig& config,
                 const Vocab& vocab);
  // Writes every entry held; one that cannot be written costs a warning on stderr.
  void commit();

 private:
  std::vector<std::function<std::string()>> writes_;  // each returns "" or why it failed
  std::vector<std::string> pending_;                  // files to remove if never committed
  std::vector<std::string> made_dirs_;                // folders made for them, deepest first
};

}  // namespace txl
