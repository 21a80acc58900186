// The AdamW update of torch::optim::AdamW, one pass over each parameter.
//
// LibTorch's step runs about nine whole-tensor operations per parameter (decay, two for each
// moment, sqrt, division, epsilon, the update), each a pass through memory; this reads the
// parameter, its gradient and both moments once and writes them back once, with the same
// arithmetic in float32. The moments stay in the optimizer's own state (its state map, the
// same AdamWParamState entries), so checkpoints saved and loaded with torch::save /
// torch::load are the same as before, and optimizer.step() could continue from them.
#pragma once

#include <torch/torch.h>

namespace txl {

// optimizer.step() for float32 CPU parameters without amsgrad; anything else (another
// dtype, a GPU, amsgrad) is handed to optimizer.step() itself. Parameters without a
// gradient are skipped, as step() skips them.
void adamw_step(torch::optim::AdamW& optimizer);

// Whether adamw_step does its own pass for this optimizer (else it calls step()).
bool adamw_step_is_fused(const torch::optim::AdamW& optimizer);

// The optimizer's state for parameter p, or null before its first step (the state map's key
// differs between LibTorch versions; this hides it).
const torch::optim::AdamWParamState* adamw_state(torch::optim::AdamW& optimizer,
                                                 const torch::Tensor& p);

}  // namespace txl
