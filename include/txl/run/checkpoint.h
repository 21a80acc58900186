// Checkpoints: one self-describing file per snapshot (the container: checkpoint_file.h; the
// training state's fields: train_state.h), written atomically (temporary file in
// the same directory, fsync, rename), so a crash or kill -9 at any moment leaves the previous
// checkpoint intact.
//
// File layout (format version 3; integers little-endian):
//   bytes  0..7   magic "TXLCKPT\n"
//          8..11  format version (u32)            12..15  reserved, 0 (u32)
//         16..23  meta length (u64)               24..31  XXH64 of the meta bytes (u64)
//         32..39  weights section length (u64)    40..47  XXH64 of its bytes (u64)
//         48..55  training section length (u64)   56..63  XXH64 of its bytes (u64)
//         64..    meta: JSON text (format, version, step, tokens_seen, config, vocab_checksum,
//                 stream_position, model_config, vocab_size, optimizer param-group options,
//                 skipped steps, training-split fingerprint, progress-interval sums)
//                 weights section: a torch::serialize archive holding
//                   model/     parameters and buffers
//                   rng        the CPU generator state (dropout), rng_cuda on a GPU
//                 training section: a torch::serialize archive holding (empty: weights only)
//                   optimizer/ AdamW state (per-parameter moments and step counts)
//                   memory/    the training memory, one tensor per layer (absent when empty)
// The sections are apart so that what needs only the weights (eval, export, sample, compare,
// the probes, study, --init-from) reads, checks and holds the weights alone: AdamW's two
// moments are twice the weights (a 151M-parameter run: 0.6 GB of weights, 1.2 GB of moments).
// Version 2 (still read, never written) had a 48-byte header, bytes 32..47 describing one
// payload, an archive holding all four.
// The lengths catch a truncated file and the checksums a corrupted one before LibTorch reads
// a byte: its zip reader does not verify CRCs, so flipped bits in tensor data would otherwise
// load as a silently wrong model. A damaged training section stops a resume and
// verify_checkpoint, not a reader of the weights.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config_diff.h"
#include "txl/model/memory.h"
#include "txl/model/transformer.h"
#include "txl/run/checkpoint_file.h"
#include "txl/run/train_state.h"
#include "txl/util/hash.h"

namespace txl {

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

// Whether the checkpoint holds an optimizer state (meta block only): txl import writes weights
// alone, which training cannot resume from. InputError like read_checkpoint_state.
bool holds_optimizer_state(const std::string& path);

// "PATH: holds weights only ...; ... use txl train --config FILE --init-from DIR to fine-tune
// it": why a weights-only checkpoint cannot be resumed, and what to do instead.
std::string weights_only(const std::string& path);

// Loads into an existing model and restores the CPU generator. With an optimizer (a resume)
// it also reads the training section: the optimizer state and the memory; without one
// (weights only) that section is neither read nor checked, and `memory` stays empty.
// Every problem is an InputError naming the file and what is wrong: missing, a directory,
// truncated, corrupted (checksum), foreign (no txl header), another format version, a model
// configuration or vocabulary size that differs from `model` (the differing keys are listed),
// tensors that do not fit, or, with an optimizer, a checkpoint of weights only. The model's
// parameters are released before the checkpoint's take their place (the weights are held
// once, not twice), so after an error its weights are unusable.
LoadedCheckpoint load_checkpoint(const std::string& path, TransformerLM& model,
                                 torch::optim::Optimizer* optimizer);

// Reads the whole file and checks lengths and every section's checksum; throws InputError like
// load_checkpoint. For tools and tests that ask "is this checkpoint intact?".
void verify_checkpoint(const std::string& path);

}  // namespace txl
