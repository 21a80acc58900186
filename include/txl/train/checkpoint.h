// Checkpoints: one self-describing file per snapshot, written atomically.
//
// Layout (a torch::serialize archive):
//   meta       JSON string: format, version, step, tokens_seen, config, vocab_checksum,
//              stream_position, best_valid_ppl, lr
//   model/     parameters and buffers
//   optimizer/ AdamW state (per-parameter moments and step counts)
//   memory/    the training memory, one tensor per layer (absent when empty)
//   rng        the CPU generator state
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "txl/model/memory.h"
#include "txl/model/transformer.h"

namespace txl {

inline constexpr const char* kCheckpointFormat = "txl-checkpoint";
inline constexpr int kCheckpointVersion = 1;

struct TrainState {
  int64_t step = 0;               // optimizer steps done
  int64_t tokens_seen = 0;
  int64_t stream_position = 0;    // StreamBatcher::position() for the next step
  double best_valid_ppl = 0.0;    // 0 = none yet
  nlohmann::json config;          // the resolved config
  uint64_t vocab_checksum = 0;
};

void save_checkpoint(const std::string& path, const TrainState& state, TransformerLM& model,
                     torch::optim::Optimizer* optimizer, const Memory& memory);

struct LoadedCheckpoint {
  TrainState state;
  Memory memory;
};

// Reads the meta block only (fast), for checks before building a model.
TrainState read_checkpoint_state(const std::string& path);

// Loads into an existing model (and optimizer when given). A truncated, corrupted or
// foreign file, a newer format version or mismatching shapes throw InputError naming the file.
LoadedCheckpoint load_checkpoint(const std::string& path, TransformerLM& model,
                                 torch::optim::Optimizer* optimizer);

}  // namespace txl
