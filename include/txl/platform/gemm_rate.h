// Measured matrix-multiply throughput: the peak a model's FLOP rate is judged against.
#pragma once

#include <torch/torch.h>

namespace txl {

// GFLOP/s of an n x n x n matmul in `dtype` on the current thread count, best of `reps`
// after one warm-up.
double measure_gemm_gflops(torch::ScalarType dtype, int64_t n = 1024, int reps = 5,
                           const torch::Device& device = torch::kCPU);

}  // namespace txl
