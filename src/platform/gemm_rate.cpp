#include "txl/platform/gemm_rate.h"

#include <chrono>
#include <functional>

#include "txl/platform/device.h"
#include "txl/platform/onednn.h"

namespace txl {

namespace {

// GFLOP/s of product(), which computes one n x n x n matmul: best of `reps` after a warm-up
// (thread pools, kernel selection).
double best_rate(const std::function<void()>& product, int64_t n, int reps,
                 const torch::Device& device) {
  product();
  synchronize(device);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    product();
    synchronize(device);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * n * n * n / best / 1e9;
}

}  // namespace

GemmRates measure_gemm_rates(torch::ScalarType dtype, int64_t n, int reps,
                             const torch::Device& device) {
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n}).to(device, dtype);
  auto b = torch::randn({n, n}).to(device, dtype);
  GemmRates rates;
  rates.libtorch = best_rate([&] { torch::matmul(a, b); }, n, reps, device);
  if (device.is_cpu() && onednn_matmul(a, b).defined())
    rates.onednn = best_rate([&] { onednn_matmul(a, b); }, n, reps, device);
  return rates;
}

double measure_gemm_gflops(torch::ScalarType dtype, int64_t n, int reps,
                           const torch::Device& device) {
  return measure_gemm_rates(dtype, n, reps, device).best();
}

}  // namespace txl
