// load_training_data (trainer.h): the corpus and every check on it that needs no run
// directory.
#include "txl/train/training_data.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/platform/resources.h"
#include "txl/train/batcher.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/step_footprint.h"
#include "txl/train/train_probes.h"
#include "txl/train/trainer.h"
#include "txl/util/clock.h"
#include "txl/util/error.h"

namespace txl {

void check_segments_fit_streams(int64_t train_tokens, const TrainConfig& train) {
  const int64_t longest = longest_segment(train);
  if (longest == train.tgt_len)
    return check_training_streams(train_tokens, train.batch_size, longest);
  const int64_t per_stream = train_tokens / train.batch_size;
  if (per_stream < 2 || longest <= per_stream - 1) {
    return check_training_streams(train_tokens, train.batch_size, longest);
  }
  throw InputError(fmt::format(
      "train.tgt_len_max ({}) is longer than a training stream: the training split's {} tokens / "
      "train.batch_size {} = {} tokens per stream, so the longest segment can be at most {} (the "
      "last target is the token after the segment); lower train.tgt_len_max or train.batch_size",
      longest, train_tokens, train.batch_size, per_stream, per_stream - 1));
}

Corpus load_training_data(const Config& config, TokenCacheWrites* writes, const Vocab* vocab,
                          int world_size) {
  TrainingFootprint footprint;
  return load_training_data(config, writes, vocab, world_size, &footprint);
}

Corpus load_training_data(const Config& config, TokenCacheWrites* writes, const Vocab* vocab,
                          int world_size, TrainingFootprint* footprint) {
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
  check_segments_fit_streams(static_cast<int64_t>(corpus.train.size()), tc);
  plan_train_probes(config, corpus.valid, corpus.vocab,
                    /*print=*/true);  // train.probes and their budget
  const double limit = process_ram_limit_bytes();
  Config process = config;  // what one process trains: its share of the streams
  process.train.batch_size = std::max<int64_t>(1, tc.batch_size / std::max(1, world_size));
  *footprint = measure_training_footprint(process, corpus.vocab.size(), longest_segment(tc),
                                          &corpus.train, limit);
  check_training_footprint(*footprint, limit);
  own.commit();
  return corpus;
}

}  // namespace txl
