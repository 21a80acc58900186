// The footprint (RAM) a training run will need, from its configuration alone, so that a model
// too big for the machine is refused (exit 2) before anything is allocated or written.
#pragma once

#include <cstdint>
#include <string>

#include "txl/config/config.h"
#include "txl/model/model_size.h"

namespace txl {

// Doubles: a mistyped configuration (model.n_layer = 100000) must give a large number, not
// an overflowed one.
struct TrainingFootprint {
  double parameters = 0;        // exactly what count_parameters gives for the built model
  double weight_bytes = 0;      // fp32 weights
  double gradient_bytes = 0;    // one fp32 gradient per weight
  double optimizer_bytes = 0;   // AdamW's two fp32 moments per weight
  double activation_bytes = 0;  // what one training step keeps for backward (a lower bound)
  // Set by measure_training_footprint (step_footprint.h): the activations measured instead of
  // computed, and the heap's share; process_bytes is this process's resident memory before
  // the model wherever the estimate is made in a process that holds the corpus.
  bool measured = false;
  int64_t measured_streams = 0;  // the streams the measured steps were extrapolated to
  double process_bytes = 0;      // LibTorch, the corpus: resident when the estimate was made
  double slack_bytes = 0;        // malloc's holes, the checkpoint and validation (kHeapSlack)
  // Of the total, what grows with the vocabulary: the embedding and output layer (weights,
  // gradients, AdamW state) and the output's logits. Named in a refusal, with adaptive
  // softmax among the hints when it is most of the total and the run has none.
  double vocabulary_bytes = 0;
  int64_t vocab_size = 0;
  bool adaptive = false;
  double total_bytes() const;
};

// `segment_len`: the tokens per training segment (train.tgt_len once it fits the streams).
TrainingFootprint estimate_training_footprint(const Config& config, int64_t vocab_size,
                                              int64_t segment_len);

// The one decision "does this training fit in memory", for every judge: one `txl train`
// (processes 1), `--nproc N` and `txl study --jobs N` (N processes training at once, each
// with this footprint), `--dry-run`, and the diagnosis of a killed run. `limit_bytes`: what
// the processes may hold together at their peak (resources.h, process_ram_limit_bytes: a
// container's size, TXL_MEMORY_LIMIT_MB, or what the process holds plus what the machine can
// still give); 0 = unknown: it fits. Each process's figure is total_bytes(), its own
// resident memory (LibTorch, the corpus) included.
bool training_footprint_fits(const TrainingFootprint& estimate, double limit_bytes,
                             int64_t processes = 1);

// The parts, for messages: "N parameters: W of weights, ..., S of heap slack".
std::string describe_footprint_parts(const TrainingFootprint& estimate);

// InputError naming the estimate by part, the processes and the limit when they do not fit
// (training_footprint_fits).
void check_training_footprint(const TrainingFootprint& estimate, double limit_bytes,
                              int64_t processes = 1);

// The most streams a measured step takes (step_footprint.h): a fifth to an eighth of a
// training step at the paper's batches of 32 to 60.
inline constexpr int64_t kMeasuredStreams = 8;

// How a measured estimate was measured, for reports: "one training step of 8 streams", or
// "training steps of 4 and 8 streams, extrapolated to 60".
std::string measured_steps(int64_t streams);

}  // namespace txl
