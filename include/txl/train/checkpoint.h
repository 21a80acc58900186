// Checkpoints: one self-describing file per snapshot, written atomically (temporary file in
// the same directory, fsync, rename), so a crash or kill -9 at any moment leaves the previous
// checkpoint intact.
//
// File layout (format version 2; integers little-endian):
//   bytes  0..7   magic "TXLCKPT\n"
//          8..11  format version (u32)            12..15  reserved, 0 (u32)
//         16..23  meta length (u64)               24..31  XXH64 of the meta bytes (u64)
//         32..39  payload length (u64)            40..47  XXH64 of the payload bytes (u64)
//         48..    meta: JSON text (format, version, step, tokens_seen, config, vocab_checksum,
//                 stream_position, model_config, vocab_size, optimizer param-group options,
//                 skipped steps, training-split fingerprint, progress-interval sums)
//                 payload: a torch::serialize archive holding
//                   model/     parameters and buffers
//                   optimizer/ AdamW state (per-parameter moments and step counts)
//                   memory/    the training memory, one tensor per layer (absent when empty)
//                   rng        the CPU generator state (dropout)
// The lengths catch a truncated file and the checksums a corrupted one before LibTorch reads
// a byte: its zip reader does not verify CRCs, so flipped bits in tensor data would otherwise
// load as a silently wrong model.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/model/memory.h"
#include "txl/model/transformer.h"

namespace txl {

inline constexpr const char* kCheckpointFormat = "txl-checkpoint";
inline constexpr int kCheckpointVersion = 2;

struct TrainState {
  int64_t step = 0;  // optimizer steps done (skipped non-finite steps included)
  int64_t tokens_seen = 0;
  int64_t stream_position = 0;  // StreamBatcher::position() for the next step
  double best_valid_ppl = 0.0;  // 0 = none yet
  nlohmann::json config;        // the resolved config
  uint64_t vocab_checksum = 0;
  double lr = 0.0;            // learning rate of the last step (the schedule's position)
  int64_t skipped_steps = 0;  // non-finite steps skipped under train.skip_nonfinite
  // Fingerprint of the training split, so a resume on an edited corpus is refused instead of
  // silently reading other data at the saved stream position.
  int64_t train_tokens = 0;
  uint64_t train_checksum = 0;
  // The progress line in progress when the checkpoint was taken, so that a resumed run logs
  // the same interval means as an uninterrupted one.
  double interval_loss_sum = 0.0;
  int64_t interval_steps = 0;   // steps in the interval (for ms/step)
  int64_t interval_finite = 0;  // of which had a finite loss (for the mean loss)
  double interval_seconds = 0.0;
};

// XXH64 (seed 0) of a byte range: checkpoint integrity and corpus fingerprints.
uint64_t xxh64(const void* data, size_t size, uint64_t seed = 0);

// `optimizer` may be null (weights only); its AdamW param-group options (lr, betas, eps,
// weight decay) are saved in the meta block because torch's own serialisation drops them.
void save_checkpoint(const std::string& path, const TrainState& state, TransformerLM& model,
                     torch::optim::Optimizer* optimizer, const Memory& memory);

struct LoadedCheckpoint {
  TrainState state;
  Memory memory;
};

// Reads and checks the header and meta block only (fast, no tensors), for checks before
// building a model.
TrainState read_checkpoint_state(const std::string& path);

// Loads into an existing model (and optimizer when given) and restores the CPU generator.
// Every problem is an InputError naming the file and what is wrong: missing, a directory,
// truncated, corrupted (checksum), foreign (no txl header), another format version, a model
// configuration or vocabulary size that differs from `model` (the differing keys are listed),
// or tensors that do not fit.
LoadedCheckpoint load_checkpoint(const std::string& path, TransformerLM& model,
                                 torch::optim::Optimizer* optimizer);

// Reads the whole file and checks lengths and checksums; throws InputError like
// load_checkpoint. For tools and tests that ask "is this checkpoint intact?".
void verify_checkpoint(const std::string& path);

// Keys ("section.key") whose values differ between two resolved configs, as
// "model.d_model: 16 vs 32", skipping the keys in `ignore`.
std::vector<std::string> config_differences(const nlohmann::json& a, const nlohmann::json& b,
                                            const std::vector<std::string>& ignore = {});

}  // namespace txl
