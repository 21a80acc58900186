// The gradients' global L2 norm, and clipping them to a largest norm, as
// torch::nn::utils::clip_grad_norm_ does (the same float32 arithmetic and coefficient).
//
// That function launches one norm and one scaling per parameter: about 400 small kernels for
// Transformer-XL base, 5 ms of a 69 ms step on an H200. These take the norms of every gradient
// in one multi-tensor (foreach) call and scale them in another, where multi_tensor_enabled().
#pragma once

#include <torch/torch.h>

#include <vector>

namespace txl {

// sqrt(sum over parameters with a gradient of |grad|^2); 0 when none has a gradient. The
// gradients are left as they are (train.clip = 0: the non-finite check must see NaN gradients
// behind a finite loss too).
double total_grad_norm(const std::vector<torch::Tensor>& parameters);

// Scales every gradient by min(1, max_norm / (norm + 1e-6)) and returns the norm before
// scaling (non-finite where a gradient is; the gradients are then scaled by NaN, as torch's
// function does). max_norm > 0.
double clip_gradients(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace txl
