#include "txl/study/study_checks.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <map>

#include "txl/data/corpus.h"
#include "txl/eval/protocol.h"
#include "txl/platform/resources.h"
#include "txl/probe/run_probes.h"
#include "txl/train/batcher.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/step_footprint.h"
#include "txl/train/train_probes.h"
#include "txl/train/training_data.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// What the checks need of a corpus: loaded once per distinct data block of the grid.
struct CorpusFacts {
  std::vector<int32_t> train;  // the measured steps' targets, as the cell's own run takes them
  Vocab vocab;
  std::vector<int32_t> eval_ids;  // the study's eval.split, as the probes will read it
  std::vector<int32_t> valid;     // what train.probes read during training
};

const std::vector<int32_t>& split_ids(const Corpus& corpus, const std::string& split) {
  if (split == "test") return corpus.test;
  if (split == "train") return corpus.train;
  return corpus.valid;
}

// The longest name a file system takes for one file (NAME_MAX on Linux), and the longest
// suffix a cell's files add to its name (cells/NAME.time.json).
constexpr size_t kNameMax = 255;
constexpr size_t kCellSuffix = sizeof(".time.json") - 1;

// The cells' footprints as their runs will measure them (step_footprint.h), one per distinct
// configuration but for its seed (a grid of seeds measures once).
using Footprints = std::map<std::string, TrainingFootprint>;

// The probes as run_cell will plan them, on the cell's config and the split (their checks
// read no weights), and train.probes as the cell's training will (train_probes.h): a
// distance past the split or a learned table refused now, not after the cell trained.
void check_cell_probes(const StudySpec& spec, const StudyCell& cell, const CorpusFacts& facts) {
  if (!spec.eval.probes.names.empty()) {
    ProbeSubject subject;
    subject.ids = &facts.eval_ids;
    subject.vocab = &facts.vocab;
    subject.config = &cell.config;
    subject.lengths = spec.eval.lengths;
    try {
      plan_probes(spec.eval.probes, subject, "eval.probes");
    } catch (const InputError& e) {
      throw InputError(std::string("eval.probes: ") + e.what());
    }
  }
  plan_train_probes(cell.config, facts.valid, facts.vocab);
}

void check_cell(const StudySpec& spec, const StudyCell& cell,
                std::map<std::string, CorpusFacts>& corpora, Footprints& footprints, double limit,
                int64_t jobs) {
  if (cell.name.size() + kCellSuffix > kNameMax) {
    throw InputError(
        fmt::format("its name is {} bytes long, and its files' names would pass the "
                    "{} bytes a file name may have; use shorter grid values",
                    cell.name.size(), kNameMax));
  }
  const std::string data_key = config_to_json(cell.config)["data"].dump();
  auto it = corpora.find(data_key);
  if (it == corpora.end()) {
    // Every cell training at once reads its corpus in its own process.
    check_corpus_dir(cell.config.data, available_ram_bytes() / static_cast<double>(jobs));
    Corpus corpus = load_corpus(cell.config.data);
    CorpusFacts facts;
    facts.eval_ids = split_ids(corpus, spec.eval.split);
    facts.valid = std::move(corpus.valid);
    facts.train = std::move(corpus.train);
    facts.vocab = std::move(corpus.vocab);
    it = corpora.emplace(data_key, std::move(facts)).first;
  }
  // Every protocol at every length decided as run_cell will (n/a is a cell's result; a
  // refused request stops the study now, not after the cell trained).
  for (const auto& protocol : spec.protocols) {
    for (const int64_t length : spec.eval.lengths) {
      try {
        request_unavailable(cell.config.model, study_request(protocol, cell.config, length));
      } catch (const InputError& e) {
        throw InputError(
            fmt::format("eval: {} at length {}: {}", protocol.label, length, e.what()));
      }
    }
  }
  const TrainConfig& train = cell.config.train;
  check_segments_fit_streams(static_cast<int64_t>(it->second.train.size()), train);
  check_cell_probes(spec, cell, it->second);
  const int64_t vocab = static_cast<int64_t>(it->second.vocab.size());
  nlohmann::json key = config_to_json(cell.config);
  key["train"].erase("seed");
  auto measured = footprints.find(key.dump());
  if (measured == footprints.end()) {
    const TrainingFootprint footprint = measure_training_footprint(
        cell.config, vocab, longest_segment(train), &it->second.train, limit);
    measured = footprints.emplace(key.dump(), footprint).first;
  }
  // --jobs N: N cells train at once, each in its own process with its own footprint.
  try {
    check_training_footprint(measured->second, limit, jobs);
  } catch (const InputError& e) {
    if (jobs <= 1) throw;
    throw InputError(fmt::format("with --jobs {}: {}", jobs, e.what()));
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
  const double limit = process_ram_limit_bytes();
  std::map<std::string, CorpusFacts> corpora;
  Footprints footprints;
  for (const StudyCell* cell : to_train) {
    try {
      check_cell(spec, *cell, corpora, footprints, limit, at_once);
    } catch (const InputError& e) {
      throw InputError(spec.source + ": cell " + cell->name + " (grid values " +
                       join(cell->overrides) + ") cannot train: " + e.what() +
                       ". Nothing was trained or written; fix or remove that grid value");
    }
  }
}

}  // namespace txl
