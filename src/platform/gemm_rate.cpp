#include "txl/platform/gemm_rate.h"

#include <chrono>

#include "txl/platform/device.h"

namespace txl {

double measure_gemm_gflops(torch::ScalarType dtype, int64_t n, int reps,
                           const torch::Device& device) {
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n}).to(device, dtype);
  auto b = torch::randn({n, n}).to(device, dtype);
  auto c = torch::matmul(a, b);  // warm-up: thread pools, kernel selection
  synchronize(device);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::matmul(a, b);
    synchronize(device);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * n * n * n / best / 1e9;
}

}  // namespace txl
