// What the training loop checks about a step before applying it (the gradients' global norm,
// that loss and gradients are finite).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace txl {

// Drops every parameter's gradient (undefined, not zero-filled), so backward writes fresh ones:
// no fill of each gradient and no add into it per step. What the zero_grad of newer torch
// versions does by default; 1.13's zero_grad fills zeros. A parameter no loss reaches then
// has no gradient and AdamW skips it, as it would in newer torch.
void clear_gradients(const std::vector<torch::Tensor>& parameters);

// Every defined tensor holds only finite values.
bool all_finite(const std::vector<torch::Tensor>& tensors);

}  // namespace txl
