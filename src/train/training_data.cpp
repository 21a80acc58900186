// load_training_data (trainer.h): the corpus and every check on it that needs no run
// directory.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/platform/resources.h"
#include "txl/train/batcher.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/step_footprint.h"
#include "txl/train/trainer.h"
#include "txl/util/clock.h"

namespace txl {

Corpus load_training_data(const Config& config, TokenCacheWrites* writes, const Vocab* vocab,
                          int world_size) {
  auto t_load = Clock::now();
  TokenCacheWrites own;
  int64_t unknown = 0;
  Corpus corpus = vocab != nullptr ? load_corpus_with_vocab(config.data, *vocab, &unknown,
                                                            writes ? writes : &own)
                                   : load_corpus(config.data, writes != nullptr ? writes : &own);
  fmt::print(stderr, "data: {} | vocab {}{} | train {} / valid {} / test {} tokens | {:.1f} s\n",
             config.data.dir, corpus.vocab.size(), vocab != nullptr ? " (from vocab.json)" : "",
             corpus.train.size(), corpus.valid.size(), corpus.test.size(), seconds_since(t_load));
  if (unknown > 0) {
    fmt::print(stderr, "data: {} tokens of {} are not in the vocabulary and read as {}\n", unknown,
               config.data.dir, kUnkToken);
  }
  // The clusters need the vocabulary's size; checked here, before a run directory exists.
  validate_adaptive_vocab(config.model.adaptive, static_cast<int64_t>(corpus.vocab.size()));
  const auto& tc = config.train;
  check_training_streams(static_cast<int64_t>(corpus.train.size()), tc.batch_size,
                         longest_segment(tc));
  const double available = available_ram_bytes();
  Config process = config;  // what one process trains: its share of the streams
  process.train.batch_size = std::max<int64_t>(1, tc.batch_size / std::max(1, world_size));
  check_training_footprint(
      measure_training_footprint(process, corpus.vocab.size(), longest_segment(tc), &corpus.train,
                                 available),
      available);
  own.commit();
  return corpus;
}

}  // namespace txl
