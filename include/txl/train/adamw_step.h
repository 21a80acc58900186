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

// optimizer.step() for float32 CPU parameters without amsgrad; float32 parameters on one GPU
// go to LibTorch's fused kernel (adamw_step_multi_tensor) where there is one; anything else
// (another dtype, amsgrad, LibTorch before 2.4) is handed to optimizer.step() itself.
// Parameters without a gradient are skipped, as step() skips them.
void adamw_step(torch::optim::AdamW& optimizer);

// Whether this LibTorch has the fused AdamW kernel (at::_fused_adamw_, CPU and CUDA: 2.4 on).
bool adamw_multi_tensor_available();

// The same update by LibTorch's fused kernel, every parameter of a group (of one step count)
// in one call: on a GPU, where step() launches about nine small kernels per parameter (12 ms
// of a 69 ms step for Transformer-XL base on an H200), this launches a few. The moments and
// step counts stay in the optimizer's state, as with adamw_step. Parameters must be float32,
// contiguous and on one device; throws where the kernel is not available.
void adamw_step_multi_tensor(torch::optim::AdamW& optimizer);

// Whether adamw_step does its own pass for this optimizer (else it calls step()).
bool adamw_step_is_fused(const torch::optim::AdamW& optimizer);

// Whether adamw_step hands this optimizer to adamw_step_multi_tensor: the kernel is there, no
// amsgrad, and every parameter with a gradient (at least one) is a contiguous float32 tensor
// on one GPU.
bool adamw_step_is_multi_tensor(const torch::optim::AdamW& optimizer);

// The optimizer's state for parameter p, or null before its first step (the state map's key
// differs between LibTorch versions; this hides it).
const torch::optim::AdamWParamState* adamw_state(torch::optim::AdamW& optimizer,
                                                 const torch::Tensor& p);

}  // namespace txl
