#include "txl/study/study_checks.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <map>

#include "txl/data/corpus.h"
#include "txl/platform/resources.h"
#include "txl/train/batcher.h"
#include "txl/train/memory_estimate.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// What the checks need of a corpus: loaded once per distinct data block of the grid.
struct CorpusSize {
  int64_t vocab = 0;
  int64_t train_tokens = 0;
};

void check_cell(const StudyCell& cell, std::map<std::string, CorpusSize>& corpora,
                double memory_share, int64_t jobs) {
  const std::string data_key = config_to_json(cell.config)["data"].dump();
  auto it = corpora.find(data_key);
  if (it == corpora.end()) {
    check_corpus_dir(cell.config.data);
    const Corpus corpus = load_corpus(cell.config.data);
    it = corpora
             .emplace(data_key, CorpusSize{static_cast<int64_t>(corpus.vocab.size()),
                                           static_cast<int64_t>(corpus.train.size())})
             .first;
  }
  const TrainConfig& train = cell.config.train;
  check_training_streams(it->second.train_tokens, train.batch_size, longest_segment(train));
  const MemoryEstimate estimate =
      estimate_training_memory(cell.config, it->second.vocab, longest_segment(train));
  try {
    check_training_memory(estimate, memory_share);
  } catch (const InputError& e) {
    if (jobs <= 1) throw;
    throw InputError(
        fmt::format("{} (with --jobs {}, each cell training at once has 1/{} of "
                    "the memory; fewer --jobs leave each more)",
                    e.what(), jobs, jobs));
  }
}

}  // namespace

void check_cells_can_train(const StudySpec& spec, const StudyPaths& paths,
                           const std::vector<const StudyCell*>& cells, int64_t jobs) {
  std::vector<const StudyCell*> to_train;
  for (const StudyCell* cell : cells) {
    if (cell_state(spec, *cell, paths) != CellState::kDone) to_train.push_back(cell);
  }
  const int64_t at_once =
      std::max<int64_t>(1, std::min<int64_t>(jobs, static_cast<int64_t>(to_train.size())));
  const double available = available_memory_bytes();
  std::map<std::string, CorpusSize> corpora;
  for (const StudyCell* cell : to_train) {
    try {
      check_cell(*cell, corpora, available / static_cast<double>(at_once), at_once);
    } catch (const InputError& e) {
      throw InputError(spec.source + ": cell " + cell->name + " (grid values " +
                       join(cell->overrides) + ") cannot train: " + e.what() +
                       ". Nothing was trained or written; fix or remove that grid value");
    }
  }
}

}  // namespace txl
