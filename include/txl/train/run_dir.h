// A run directory describes itself; eval, compare and sample rebuild everything from it:
//   config.json     the resolved configuration (every key)
//   vocab.json      the vocabulary built from the training split
//   checkpoint.pt   the last checkpoint        best.pt   the best by validation perplexity
//   metrics.jsonl   one JSON object per log interval and per validation
#pragma once

#include <string>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/model/transformer.h"
#include "txl/train/checkpoint.h"

namespace txl {

struct RunPaths {
  std::string dir;
  std::string config() const { return dir + "/config.json"; }
  std::string vocab() const { return dir + "/vocab.json"; }
  std::string last_checkpoint() const { return dir + "/checkpoint.pt"; }
  std::string best_checkpoint() const { return dir + "/best.pt"; }
  std::string metrics() const { return dir + "/metrics.jsonl"; }
};

// runs/<config file stem>-<YYYYmmdd-HHMMSS>
std::string default_run_dir(const std::string& config_path);

// Refuses (InputError) an existing non-empty directory unless `force`; creates parents.
void prepare_run_dir(const std::string& dir, bool force);

// The run's name for tables: the directory's last component.
std::string run_name(const std::string& dir);

struct LoadedRun {
  RunPaths paths;
  Config config;
  Vocab vocab;
  TransformerLM model{nullptr};
  TrainState state;
};

// which: "best" (falls back to the last checkpoint when no best exists) or "last".
// A missing directory, config, vocabulary or checkpoint, or a checkpoint whose vocabulary
// checksum differs from vocab.json, throws InputError naming the file.
LoadedRun load_run(const std::string& dir, const std::string& which = "best");

}  // namespace txl
