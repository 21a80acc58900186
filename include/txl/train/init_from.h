// Fine-tuning: `txl train --config C --init-from RUN [--checkpoint best|last]` starts a new run
// whose weights are RUN's (an imported run or any trained one), with a fresh AdamW state,
// step 0 and C's schedule. The vocabulary is RUN's too: the new run keeps it (vocab.json, and a
// subword model beside it) and reads the corpus with it, a token it lacks as <unk>.
//
// C may change what sets no parameter's shape (dropout, learning rate, schedule, batch,
// lengths, clamp_len, ...); a shape key (config_diff.h: shape_differences) or data.tokenizer
// that differs from RUN's config is refused, naming each with both values.
//
// The new run records where it started in its origin.json (the file txl import writes):
//   {"init_from": RUN (absolute), "checkpoint": "best.pt" | "checkpoint.pt", "step": N,
//    "xxh64": the checkpoint file's XXH64, "started_at": UTC time,
//    "origin": RUN's own origin.json, when it has one}
// which eval's header reads (run_dir.h: describe_origin): "fine-tuned from RUN (...; imported
// from FILE ...)". A later --resume of the new run reads the corpus with its vocab.json again.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/model/transformer.h"

namespace txl {

struct InitSource {
  std::string dir;         // RUN as given
  std::string checkpoint;  // the file the weights come from (RUN/best.pt or RUN/checkpoint.pt)
  int64_t step = 0;        // that checkpoint's step
  uint64_t hash = 0;       // XXH64 of that file
  Config config;           // RUN's config.json
  Vocab vocab;             // RUN's vocab.json: the new run's vocabulary
  nlohmann::json origin;   // RUN's origin.json, or null
  TransformerLM model{nullptr};  // RUN's model with the checkpoint's weights, on the CPU
};

// RUN read and checked as a source of weights, for a new run into `run_dir`: InputError
// starting "--init-from RUN" for a path that is missing, not a directory, the new run's own
// --run-dir, not a complete run (config.json, vocab.json), without a checkpoint, or whose
// checkpoint is damaged or belongs to another model or vocabulary. `which`: best | last
// (load_run's choice, as export and eval make it). Reads the checkpoint; writes nothing.
InitSource load_init_source(const std::string& dir, const std::string& which,
                            const std::string& run_dir);

// InputError naming every shape key (and data.tokenizer) in which `config` (from
// `config_path`) differs from the source's config.json, with both values.
void check_init_config(const InitSource& source, const Config& config,
                       const std::string& config_path);

// origin.json of the new run (above).
void write_init_record(const InitSource& source, const std::string& run_dir);

// Copies the source's parameters into `model` (built from a config check_init_config
// accepted, on any device) and releases the source's model. Buffers are not copied: they
// follow from the new config.
void take_init_weights(InitSource& source, TransformerLM& model);

// Whether the run in `run_dir` was started by --init-from (its origin.json says so): its
// vocabulary is vocab.json, not one built from the corpus.
bool is_fine_tuned_run(const std::string& run_dir);

}  // namespace txl
