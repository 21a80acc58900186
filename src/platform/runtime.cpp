#include "txl/platform/runtime.h"

#include <ATen/autocast_mode.h>
#include <dlfcn.h>
#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

#include "txl/platform/torch_compat.h"
#include "txl/util/env.h"

namespace txl {

namespace {

// The path of the first mapped library whose name contains `needle`, or "".
std::string mapped_library(const std::string& needle) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(needle) != std::string::npos) return path;
  }
  return "";
}

bool openblas_loaded() { return !mapped_library("openblas").empty(); }

// OpenBLAS's name for the kernel set it chose (openblas_get_corename), "" without OpenBLAS.
std::string openblas_core_name() {
  using CoreName = char* (*)();
  auto fn = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return fn != nullptr ? std::string(fn()) : std::string();
}

// What OpenBLAS does in this process, before txl changes anything.
OpenBlasState openblas_state() {
  OpenBlasState state;
  state.loaded = openblas_loaded();
  state.env_coretype = env_text("OPENBLAS_CORETYPE");
  state.core = openblas_core_name();
  return state;
}

bool fixes_disabled() { return env_is("TXL_NO_BLAS_FIX", "1"); }

// OMP_WAIT_POLICY=PASSIVE unless the user chose a wait policy (see runtime.h). Returns
// whether it set it.
bool set_passive_openmp() {
  if (env_set("OMP_WAIT_POLICY") || env_set("GOMP_SPINCOUNT")) return false;
  if (std::thread::hardware_concurrency() <= 1) return false;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  return true;
}

}  // namespace

void ensure_fast_blas(int /*argc*/, char** argv) {
  if (fixes_disabled()) return;
  bool restart = false;
  const CpuPlan plan = plan_cpu(detect_cpu_flags(), openblas_state());
  if (!plan.openblas_coretype.empty()) {
    if (!plan.openblas_note.empty()) fmt::print(stderr, "warning: {}\n", plan.openblas_note);
    ::setenv("OPENBLAS_CORETYPE", plan.openblas_coretype.c_str(), 1);
    restart = true;
  }
  // libgomp reads the policy in its initialiser, before main(): only a restart applies it.
  // (Setting it from an .preinit_array function does not work: glibc's own initialiser
  // resets the environment pointer after it, before libgomp's runs.)
  restart = set_passive_openmp() || restart;
  if (!restart) return;
  ::execv("/proc/self/exe", argv);
  // execv only returns on failure; carry on as we are (inspect_blas() warns about the BLAS).
}

BlasInfo inspect_blas() {
  BlasInfo info;
  info.library = mapped_library("libblas");
  const std::string openblas = mapped_library("openblas");
  if (!openblas.empty()) {
    info.kind = "openblas";
    if (info.library.empty()) info.library = openblas;
    info.core_type = openblas_core_name();
    // What ensure_fast_blas would have changed, had it run (TXL_NO_BLAS_FIX=1, or a failed
    // restart).
    const CpuPlan plan = plan_cpu(detect_cpu_flags(), openblas_state());
    if (!plan.openblas_coretype.empty()) {
      info.warning =
          "OpenBLAS runs its " + info.core_type + " kernels, and " + plan.openblas_coretype +
          " ones would be faster or safe on this CPU. Remedy: export OPENBLAS_CORETYPE=" +
          plan.openblas_coretype + " before starting txl.";
    }
  } else if (info.library.find("/blas/") != std::string::npos) {
    info.kind = "reference";
    info.warning =
        "LibTorch uses the reference BLAS (about 4 GFLOP/s). Remedy: apt-get install "
        "libopenblas0-openmp (scripts/setup.sh does this).";
  } else {
    info.kind = info.library.empty() ? "none" : "unknown";
  }
  return info;
}

int logical_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

ThreadShare share_cores(int64_t requested, int64_t processes) {
  const int64_t cores = logical_cores();
  processes = std::max<int64_t>(1, processes);
  const int64_t equal_share = std::max<int64_t>(1, cores / processes);
  ThreadShare share;
  share.threads = requested > 0 ? requested : equal_share;
  if (processes * share.threads <= kMaxThreadsPerCore * cores) return share;
  const std::string who = processes > 1
                              ? fmt::format("{} threads x {} processes", share.threads, processes)
                              : fmt::format("{} threads", share.threads);
  if (share.threads > equal_share) {
    share.warning = fmt::format(
        "{} on {} cores: using {} thread(s) each instead (busy threads beyond {} per core only "
        "slow each other down)",
        who, cores, equal_share, kMaxThreadsPerCore);
    share.threads = equal_share;
  } else {
    share.warning = fmt::format(
        "{} processes on {} cores, more than {} per core: each runs slowly, and stopping waits "
        "for their current steps",
        processes, cores, kMaxThreadsPerCore);
  }
  return share;
}

int set_threads(int64_t requested, int64_t processes) {
  const ThreadShare share = share_cores(requested, processes);
  static std::string warned;
  if (!share.warning.empty() && share.warning != warned) {
    fmt::print(stderr, "warning: {}\n", share.warning);
    warned = share.warning;
  }
  at::set_num_threads(static_cast<int>(share.threads));
  return at::get_num_threads();
}

// LibTorch 1.13 exposes CPU autocast as set_cpu_enabled / set_autocast_cpu_dtype; 2.4+
// replaced them with device-generic calls.
#if TXL_TORCH_AT_LEAST(2, 4)
#define TXL_AUTOCAST_DEVICE_API 1
#endif

namespace {

// bf16 depends on the CPU alone, so the plan needs no OpenBLAS state (no /proc/self/maps read).
void warn_if_bf16_is_slow() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string note = plan_cpu(detect_cpu_flags(), OpenBlasState{}).bf16_note;
    if (!note.empty()) fmt::print(stderr, "warning: {}\n", note);
  });
}

}  // namespace

bool autocast_enabled(c10::DeviceType type) {
#ifdef TXL_AUTOCAST_DEVICE_API
  return at::autocast::is_autocast_enabled(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                       : at::autocast::is_cpu_enabled();
#endif
}

namespace {

// Switching autocast for `type` (CPU or CUDA), in bf16.
void set_bf16_autocast(c10::DeviceType type, bool on) {
#ifdef TXL_AUTOCAST_DEVICE_API
  at::autocast::set_autocast_dtype(type, at::kBFloat16);
  at::autocast::set_autocast_enabled(type, on);
#else
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(on);
  }
#endif
}

}  // namespace

AutocastGuard::AutocastGuard(Precision precision, const c10::Device& device)
    : enabled_(precision == Precision::kBf16), type_(device.type()) {
  if (!enabled_) return;
  if (type_ == c10::DeviceType::CPU) warn_if_bf16_is_slow();
  previous_ = autocast_enabled(type_);
  set_bf16_autocast(type_, true);
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  set_bf16_autocast(type_, previous_);
  at::autocast::clear_cache();
}

}  // namespace txl
