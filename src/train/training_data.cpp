// load_training_data (trainer.h): the corpus and every check on it that needs no run
// directory.
#include <spdlog/fmt/fmt.h>

#include "txl/platform/resources.h"
#include "txl/train/batcher.h"
#include "txl/train/memory_estimate.h"
#include "txl/train/step_memory.h"
#include "txl/train/trainer.h"
#include "txl/util/clock.h"

namespace txl {

Corpus load_training_data(const Config& config, TokenCacheWrites* writes) {
  auto t_load = Clock::now();
  TokenCacheWrites own;
  Corpus corpus = load_corpus(config.data, writes != nullptr ? writes : &own);
  fmt::print(stderr, "data: {} | vocab {} | train {} / valid {} / test {} tokens | {:.1f} s\n",
             config.data.dir, corpus.vocab.size(), corpus.train.size(), corpus.valid.size(),
             corpus.test.size(), seconds_since(t_load));
  // The clusters need the vocabulary's size; checked here, before a run directory exists.
  validate_adaptive_vocab(config.model.adaptive, static_cast<int64_t>(corpus.vocab.size()));
  const auto& tc = config.train;
  check_training_streams(static_cast<int64_t>(corpus.train.size()), tc.batch_size,
                         longest_segment(tc));
  const double available = available_memory_bytes();
  check_training_memory(measure_training_memory(config, corpus.vocab.size(), longest_segment(tc),
                                                &corpus.train, available),
                        available);
  own.commit();
  return corpus;
}

}  // namespace txl
