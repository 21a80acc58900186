// What this CPU can run, and the settings txl derives from it: which OpenBLAS kernel set
// to use and whether bf16 is worth using. The decision (plan_cpu) is a pure function of the
// CPU's flags and OpenBLAS's own state, so it is tested over flag sets of CPUs the test
// machine is not; every entry point (txl's start-up, the test binaries) goes through it.
//
// Why it matters, measured on the project's machines (docs/machines.md):
//  - OpenBLAS 0.3.21 misdetects some AVX-512 CPUs it does not know (AMD Zen 4) as Prescott
//    and runs SSE3 kernels: ~35 instead of ~155 GFLOP/s a core.
//  - OPENBLAS_CORETYPE=SkylakeX on a CPU without AVX-512 (AMD EPYC, AVX2) kills the process
//    with SIGILL at the first matrix multiply.
//  - Without bf16 instructions, oneDNN emulates bf16: bf16 GEMM ~4 against ~60 GFLOP/s fp32
//    on an AVX2 EPYC; with AMX it is 600-1900 against ~300 GFLOP/s fp32 on 2 threads.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace txl {

// Instruction-set extensions as cpuid reports them to this process (and as the OS enables
// them), named as Linux's /proc/cpuinfo names them.
struct CpuFlags {
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512cd = false;
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
};

// The flags named in `list` (/proc/cpuinfo names separated by spaces or commas; names txl
// does not use are ignored, so a whole "flags" line can be given).
CpuFlags parse_cpu_flags(const std::string& list);
// The names in `list` that are not flags txl knows (a typo such as "avx512bf16"), in order.
std::vector<std::string> unknown_cpu_flags(const std::string& list);

// The names of the set flags, space-separated, in the order of CpuFlags.
std::string to_string(const CpuFlags& flags);

// This CPU's flags from cpuid. TXL_CPU_FLAGS, when set, replaces them (a flag list as for
// parse_cpu_flags): to see, or test, what txl decides on another CPU.
CpuFlags detect_cpu_flags();

// The "model name" of /proc/cpuinfo (e.g. "AMD EPYC 7B13"), "unknown" when there is none:
// measured figures name the CPU they come from.
std::string cpu_model_name();

enum class Bf16Support {
  kMatrixUnits,  // AMX: bf16 GEMM several times faster than fp32
  kVectorUnits,  // AVX512_BF16 dot products, no matrix units
  kEmulated,     // no bf16 instructions: oneDNN converts in software, ~15x slower than fp32
};
std::string to_string(Bf16Support support);

// What OpenBLAS does in this process before txl changes anything.
struct OpenBlasState {
  bool loaded = false;
  std::optional<std::string> env_coretype;  // OPENBLAS_CORETYPE at start-up, if set
  std::string core;                         // the kernel set it chose (openblas_get_corename)
};

struct CpuPlan {
  // The value OPENBLAS_CORETYPE must have before OpenBLAS loads; empty: leave it as it is.
  std::string openblas_coretype;
  // Why, for the user, when openblas_coretype replaces a value the user set; else empty.
  std::string openblas_note;
  Bf16Support bf16 = Bf16Support::kEmulated;
  // For the user when bf16 is requested on this CPU: empty when bf16 has hardware support.
  std::string bf16_note;
};

CpuPlan plan_cpu(const CpuFlags& cpu, const OpenBlasState& blas);

// Whether OpenBLAS kernel set `core` (OPENBLAS_CORETYPE spelling, any case) only uses
// instructions `cpu` has. Names txl does not know count as runnable (OpenBLAS checks them).
bool can_run_openblas_core(const CpuFlags& cpu, const std::string& core);

}  // namespace txl
