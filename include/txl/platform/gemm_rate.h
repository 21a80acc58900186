// Measured matrix-multiply throughput: the peak a model's FLOP rate is judged against.
#pragma once

#include <torch/torch.h>

#include <algorithm>

namespace txl {

// GFLOP/s of an n x n x n matmul through each engine the model's products can take.
struct GemmRates {
  double libtorch = 0.0;  // torch::matmul (the BLAS for fp32, oneDNN for bf16 on the CPU)
  double onednn = 0.0;    // oneDNN's matmul called directly (platform/onednn.h); 0: not used
  double best() const { return std::max(libtorch, onednn); }
};

// Each engine on the current thread count, best of `reps` after one warm-up.
GemmRates measure_gemm_rates(torch::ScalarType dtype, int64_t n = 1024, int reps = 5,
                             const torch::Device& device = torch::kCPU);

// The faster engine's rate: the peak MFU is measured against.
double measure_gemm_gflops(torch::ScalarType dtype, int64_t n = 1024, int reps = 5,
                           const torch::Device& device = torch::kCPU);

}  // namespace txl
