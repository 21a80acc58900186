// txl info: the numerical set-up this machine gives LibTorch, and its measured GEMM rates.
#include <cstdlib>
#include <memory>

#include <spdlog/fmt/fmt.h>
#include <torch/version.h>

#include "txl/cli/commands.h"
#include "txl/platform/gemm_rate.h"
#include "txl/platform/runtime.h"

namespace txl {

namespace {

struct InfoOptions {
  int64_t threads = 0;
  bool no_bench = false;
};

int run_info(const InfoOptions& o) {
  const int threads = set_threads(o.threads);
  const auto blas = inspect_blas();
  const auto cpu = cpu_features();
  fmt::print("libtorch     {}\n", TORCH_VERSION);
  fmt::print("blas         {} ({}){}\n", blas.kind, blas.library,
             blas.core_type.empty() ? "" : ", core type " + blas.core_type);
  fmt::print("onednn       {}\n", at::hasMKLDNN() ? "yes" : "no");
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  fmt::print("openmp       {} (OMP_WAIT_POLICY {})\n", at::hasOpenMP() ? "yes" : "no",
             wait_policy != nullptr ? wait_policy : "unset: threads spin at barriers");
  fmt::print("threads      {} of {} logical cores\n", threads, cpu.logical_cores);
  fmt::print("cpu          avx2 {} | avx512f {} | avx512_bf16 {} | amx_bf16 {}\n", cpu.avx2 ? "yes" : "no",
             cpu.avx512f ? "yes" : "no", cpu.avx512_bf16 ? "yes" : "no", cpu.amx_bf16 ? "yes" : "no");
  if (!blas.warning.empty()) fmt::print("warning      {}\n", blas.warning);
  if (!o.no_bench) {
    fmt::print("gemm fp32    {:.1f} GFLOP/s (1024^3, best of 5)\n", measure_gemm_gflops(torch::kFloat32));
    fmt::print("gemm bf16    {:.1f} GFLOP/s (1024^3, best of 5)\n", measure_gemm_gflops(torch::kBFloat16));
  }
  return 0;
}

}  // namespace

void setup_info(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "LibTorch, BLAS, threads, CPU features and measured GEMM rates");
  cmd->add_option("--threads", o->threads, "Threads (0 = all cores)");
  cmd->add_flag("--no-bench", o->no_bench, "Skip the GEMM measurements");
  cmd->callback([o, &exit_code] { exit_code = run_info(*o); });
}

}  // namespace txl
