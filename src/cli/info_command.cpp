// txl info: the numerical set-up this machine gives LibTorch, and its measured GEMM rates.
#include <spdlog/fmt/fmt.h>
#include <torch/version.h>

#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/data/subword_model.h"
#include "txl/platform/device.h"
#include "txl/platform/gemm_rate.h"
#include "txl/platform/onednn.h"
#include "txl/platform/runtime.h"
#include "txl/train/distributed.h"
#include "txl/util/env.h"
#include "txl/util/text.h"

namespace txl {

namespace {

struct InfoOptions {
  int64_t threads = 0;
  bool no_bench = false;
  bool env = false;
};

// The variables txl's start-up (ensure_fast_blas) decided for this CPU, as NAME=value lines,
// so that scripts can start other programs (the test binaries) the same way.
int print_start_up_environment() {
  for (const char* name : {"OPENBLAS_CORETYPE", "OMP_WAIT_POLICY"}) {
    if (const auto value = env_text(name)) fmt::print("{}={}\n", name, *value);
  }
  return 0;
}

int run_info(const InfoOptions& o) {
  check_threads(o.threads, "--threads");
  if (o.env) return print_start_up_environment();
  const int threads = set_threads(o.threads);
  const auto blas = inspect_blas();
  const auto cpu = detect_cpu_flags();
  fmt::print("libtorch     {}\n", TORCH_VERSION);
  fmt::print("blas         {} ({}){}\n", blas.kind, blas.library,
             blas.core_type.empty() ? "" : ", core type " + blas.core_type);
  fmt::print("onednn       {} in LibTorch; called directly: {}\n", at::hasMKLDNN() ? "yes" : "no",
             onednn_matmul_status());
  const auto wait_policy = env_text("OMP_WAIT_POLICY");
  fmt::print("openmp       {} (OMP_WAIT_POLICY {})\n", at::hasOpenMP() ? "yes" : "no",
             wait_policy.value_or("unset: threads spin at barriers"));
  fmt::print("threads      {} of {} logical cores\n", threads, logical_cores());
  fmt::print("devices      {} (--device, train.device)\n", describe_devices());
  fmt::print("distributed  {}\n", gloo_built() ? "c10d, Gloo (txl train --nproc N)"
                                               : "unavailable: " + gloo_missing_reason());
  fmt::print("subwords     {}\n", subword_available() ? "bpe, unigram (sentencepiece plugin)"
                                                      : "unavailable: " + subword_problem());
  const auto forced = env_text("TXL_CPU_FLAGS");
  const std::string flags = to_string(cpu);
  fmt::print("cpu flags    {}{}\n", flags.empty() ? "(none of those txl uses)" : flags,
             forced ? " (from TXL_CPU_FLAGS)" : "");
  // A pasted /proc/cpuinfo line names many flags txl does not read; a typo is one of them.
  if (forced && !unknown_cpu_flags(*forced).empty()) {
    fmt::print("note         TXL_CPU_FLAGS names {} that txl does not read (ignored): {}\n",
               unknown_cpu_flags(*forced).size(), join(unknown_cpu_flags(*forced), " "));
  }
  const auto plan = plan_cpu(cpu, {});
  fmt::print("bf16         {}\n", to_string(plan.bf16));
  if (!blas.warning.empty()) fmt::print("warning      {}\n", blas.warning);
  if (!plan.bf16_note.empty()) fmt::print("warning      {}\n", plan.bf16_note);
  if (!o.no_bench) {
    for (const auto& [name, dtype] :
         {std::pair{"fp32", torch::kFloat32}, std::pair{"bf16", torch::kBFloat16}}) {
      const auto rates = measure_gemm_rates(dtype);
      const std::string onednn =
          rates.onednn > 0.0 ? fmt::format(", oneDNN direct {:.1f}", rates.onednn) : "";
      fmt::print("gemm {}    {:.1f} GFLOP/s (LibTorch {:.1f}{}; 1024^3, best of 5)\n", name,
                 rates.best(), rates.libtorch, onednn);
    }
  }
  return 0;
}

}  // namespace

void setup_info(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<InfoOptions>();
  auto* cmd =
      app.add_subcommand("info", "LibTorch, BLAS, threads, CPU features and measured GEMM rates");
  cmd->add_option("--threads", o->threads, "Threads, 0 to 1024 (0 = all cores)");
  cmd->add_flag("--no-bench", o->no_bench, "Skip the GEMM measurements");
  cmd->add_flag("--env", o->env,
                "Print only the environment txl sets at start-up on this CPU (NAME=value lines: "
                "OPENBLAS_CORETYPE, OMP_WAIT_POLICY)");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_info(*o);
  });
}

}  // namespace txl
