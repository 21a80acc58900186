// A corpus is a directory holding train.txt, valid.txt and test.txt (UTF-8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/token_cache.h"
#include "txl/data/tokenizer.h"  // EncodeStats
#include "txl/data/vocab.h"

namespace txl {

// Reads a whole file. Missing, unreadable or a directory: InputError naming the path.
std::string read_text_file(const std::string& path);

// "<dir>/<split>.txt"; split must be train, valid or test (InputError otherwise).
std::string split_path(const std::string& dir, const std::string& split);

// Checks that data.dir is a directory with all three splits, each readable and holding at
// least two tokens (an empty or whitespace-only split is an error). Reads nothing else.
// Used before a run directory is created.
void check_corpus_dir(const DataConfig& config);

// A split as check_corpus_dir found it: its file, its size on disk and its tokens.
struct SplitSize {
  std::string path;
  int64_t bytes = 0;
  int64_t tokens = 0;
};

// What reading and tokenizing the corpus (load_corpus) holds at its peak beyond what the
// process held before: a split's text while its ids are made, the ids twice while the chunks
// encoded on several threads are joined, and the ids of the splits read before it. `peak`
// names the split being read at that moment.
struct CorpusReadNeed {
  double bytes = 0;
  std::string peak;   // that split's file
  std::string parts;  // "210 MB of text and 1.7 GB for the ids of its 210000000 tokens"
};
CorpusReadNeed corpus_read_need(const std::vector<SplitSize>& splits);

// check_corpus_dir, with the memory its read and load_corpus's take checked against
// `available_bytes` (what this process can still allocate; 0 = unknown: nothing refused):
// a split whose text alone is larger is refused before it is read, and a corpus whose
// load_corpus would pass it once its tokens are counted, before any id is made (InputError
// naming the split's file and the figures). The splits' sizes, train first.
std::vector<SplitSize> check_corpus_dir(const DataConfig& config, double available_bytes);

struct Corpus {
  Vocab vocab;                 // built from train only
  std::vector<int32_t> train;  // token ids
  std::vector<int32_t> valid;
  std::vector<int32_t> test;
};

// Both go through the token cache (data/token_cache.h): a split already tokenized with the
// same vocabulary, and a vocabulary already built from the same training split with the same
// settings, are read back instead of made again. What they add to the cache goes into
// `writes` when given, for the caller to commit once its checks have passed (a refusal then
// writes nothing), else to the cache at once.
Corpus load_corpus(const DataConfig& config, TokenCacheWrites* writes = nullptr);

// The corpus encoded with a given vocabulary instead of one built from its training split (a
// fine-tuned run keeps its source run's): a token the vocabulary lacks reads as <unk>, and
// `unknown`, when given, counts those over the three splits. The vocabulary's kind must be
// config.tokenizer's (InputError otherwise).
Corpus load_corpus_with_vocab(const DataConfig& config, Vocab vocab, int64_t* unknown = nullptr,
                              TokenCacheWrites* writes = nullptr);

// A text of the user's (txl eval --text) encoded with a run's vocabulary, through the token
// cache like a split (keyed by the text's XXH64, never its name). "-" reads standard input.
// InputError naming the file for: missing, a directory, a FIFO or a device, empty, not UTF-8
// where the tokenizer reads characters (byte runs take any bytes), fewer than 2 tokens.
std::vector<int32_t> load_text(const std::string& path, const Vocab& vocab,
                               EncodeStats* stats = nullptr, TokenCacheWrites* writes = nullptr);

// One split encoded with an existing vocabulary (eval reuses the run's vocabulary).
std::vector<int32_t> load_split(const std::string& dir, const std::string& split,
                                const Vocab& vocab, EncodeStats* stats = nullptr,
                                TokenCacheWrites* writes = nullptr);

}  // namespace txl
