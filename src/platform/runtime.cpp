#include "txl/platform/runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <ATen/autocast_mode.h>
#include <torch/version.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <thread>

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

// Kernel sets OpenBLAS falls back to for CPUs it does not recognise: SSE3-era code.
bool is_generic_core(const std::string& core) {
  return core == "Prescott" || core == "prescott" || core == "Core2" || core == "Nehalem";
}

bool fixes_disabled() {
  const char* off = std::getenv("TXL_NO_BLAS_FIX");
  return off != nullptr && std::string(off) == "1";
}

// OMP_WAIT_POLICY=PASSIVE unless the user chose a wait policy (see runtime.h). Returns
// whether it set it.
bool set_passive_openmp() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return false;
  if (std::thread::hardware_concurrency() <= 1) return false;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  return true;
}

}  // namespace

void ensure_fast_blas(int /*argc*/, char** argv) {
  if (fixes_disabled()) return;
  bool restart = false;
  // Only when the detection actually failed: the same OpenBLAS picks Cooperlake on some
  // Zen 4 hosts and Prescott on others (the hypervisor's CPUID differs).
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr && __builtin_cpu_supports("avx512f") && openblas_loaded() &&
      is_generic_core(openblas_core_name())) {
    ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
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
    if (is_generic_core(info.core_type) && __builtin_cpu_supports("avx512f")) {
      info.warning = "OpenBLAS runs its generic " + info.core_type +
                     " kernel on this AVX-512 CPU (about 5x slower). Remedy: export "
                     "OPENBLAS_CORETYPE=SkylakeX before starting txl.";
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

CpuFeatures cpu_features() {
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    f.avx512_bf16 = line.find(" avx512_bf16") != std::string::npos;
    f.amx_bf16 = line.find(" amx_bf16") != std::string::npos;
    break;
  }
  f.logical_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return f;
}

int set_threads(int64_t requested) {
  const int n = requested > 0 ? static_cast<int>(requested) : cpu_features().logical_cores;
  at::set_num_threads(n);
  return at::get_num_threads();
}

// LibTorch 1.13 exposes CPU autocast as set_cpu_enabled / set_autocast_cpu_dtype; 2.4+
// replaced them with device-generic calls.
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
#define TXL_AUTOCAST_DEVICE_API 1
#endif

AutocastGuard::AutocastGuard(Precision precision) : enabled_(precision == Precision::kBf16) {
  if (!enabled_) return;
#ifdef TXL_AUTOCAST_DEVICE_API
  previous_ = at::autocast::is_autocast_enabled(at::kCPU);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
#else
  previous_ = at::autocast::is_cpu_enabled();
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
#endif
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
#ifdef TXL_AUTOCAST_DEVICE_API
  at::autocast::set_autocast_enabled(at::kCPU, previous_);
#else
  at::autocast::set_cpu_enabled(previous_);
#endif
  at::autocast::clear_cache();
}

}  // namespace txl
