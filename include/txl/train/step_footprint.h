// The training footprint (RAM) estimate from a measured step: the configuration's own model takes a
// training step with memory rows and targets like the run's, and the tensor bytes it needed
// at its peak (platform/runtime.h, TensorBytes) are the step's; at more than 8 streams, one
// step of 4 and one of 8 give the run's streams by a straight line. Every path the run will take
// (encoding, fused or masked attention, adaptive clusters, bf16 autocast) is then counted as it is,
// where the formula of footprint_estimate.h knows only what backward certainly keeps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/train/footprint_estimate.h"

namespace txl {

// Resident memory beyond the tensors' bytes at the peak of a run: malloc's heap, which
// serves the blocks under 32 MB (runtime.h) and is never trimmed, keeps the holes that steps
// of many sizes leave, and the validation pass adds its own sizes. Measured as 19-37% of the
// step's peak in such blocks (KJV's, PTB's and WikiText-2's configs, 2 steps and validation,
// Intel Xeon); the estimate adds 30% of it. Blocks of 32 MB and more are reused whole.
inline constexpr double kHeapSlack = 0.30;

// estimate_training_footprint's estimate with its activations measured: `activation_bytes` is
// then what the step held beyond the weights, the AdamW state and the gradients (its
// temporaries included), `process_bytes` this process's resident memory now (LibTorch, the
// corpus), `slack_bytes` kHeapSlack of the step's peak in heap-served blocks. `train_tokens`: the
// training split, whose first tokens are the measured steps' targets (adaptive softmax computes a
// cluster only for the rows whose target is in it); null or too short: ids drawn as a word corpus'
// are (rank r with probability ~ 1 / r). Where tensors are not counted (TXL_SYSTEM_MALLOC=1), on a
// GPU, or when even the formula's lower bound does not fit `limit_bytes`, nothing is
// measured: the formula's estimate, `measured` false. A measured step that fails (an
// allocation refused) is an InputError: the run's own step would fail the same way.
TrainingFootprint measure_training_footprint(const Config& config, int64_t vocab_size,
                                             int64_t segment_len,
                                             const std::vector<int32_t>* train_tokens,
                                             double limit_bytes);

}  // namespace txl
