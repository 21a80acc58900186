// Numerical runtime set-up: BLAS core type, thread count, mixed-precision autocast.
//
// Version-specific LibTorch calls live here only (autocast's API changed in 2.x).
#pragma once

#include <cstdint>
#include <string>

#include "txl/config/config.h"

namespace txl {

// OpenBLAS 0.3.21 misdetects AVX-512 CPUs it does not know (e.g. AMD Zen 4) as Prescott and
// runs a generic kernel (~35 instead of ~155 GFLOP/s per core, shared/NOTES.md section 6).
// It reads OPENBLAS_CORETYPE only when the library is loaded, so the fix has to happen
// before our process starts: when OpenBLAS is loaded, the CPU has AVX-512 and the variable
// is unset, this sets OPENBLAS_CORETYPE=SkylakeX and re-executes the program once.
// Call first thing in main(). TXL_NO_BLAS_FIX=1 disables it.
void ensure_fast_blas(int argc, char** argv);

struct BlasInfo {
  std::string library;    // path of the loaded libblas, e.g. .../openblas-openmp/libblas.so.3
  std::string kind;       // "openblas", "reference" or "unknown"
  std::string core_type;  // OpenBLAS's own report (openblas_get_corename), empty otherwise
  std::string warning;    // non-empty when the set-up is known to be slow, with the remedy
};
BlasInfo inspect_blas();

struct CpuFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
  int logical_cores = 1;
};
CpuFeatures cpu_features();

// 0 = every core. Returns the thread count in effect.
int set_threads(int64_t requested);

// Enables CPU autocast to bf16 for its lifetime when precision is bf16; fp32 is a no-op.
class AutocastGuard {
 public:
  explicit AutocastGuard(Precision precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_ = false;
  bool previous_ = false;
};

}  // namespace txl
