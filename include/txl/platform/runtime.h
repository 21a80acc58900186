// Numerical runtime set-up: BLAS core type, thread count, mixed-precision autocast.
//
// Version-specific LibTorch calls live here only (autocast's API changed in 2.x).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

#include "txl/config/config.h"
#include "txl/platform/cpu.h"

namespace txl {

// Settings that libraries read once, when they are loaded, so they must be in the
// environment before the process starts: when one is missing or wrong, ensure_fast_blas sets
// it and re-executes the program once (~0.35 s on an idle machine). Call it first thing in
// main(). TXL_NO_BLAS_FIX=1 disables both.
//  - OPENBLAS_CORETYPE, as plan_cpu (cpu.h) decides from this CPU's flags: a kernel set the
//    CPU can run in place of one it cannot (SkylakeX on an AVX2-only CPU: SIGILL), and a fast
//    one where OpenBLAS fell back to its SSE-era kernels. inspect_blas() reports the rest.
//  - OpenMP threads (LibTorch's and OpenBLAS's) by default spin ~300k iterations at every
//    barrier. On a machine others are also using, a spinning thread takes the core from
//    the thread it waits for: `txl bench` (2 threads, 2 cores, load 3-8 from other work)
//    ran 1.07-7x slower than with OMP_WAIT_POLICY=PASSIVE (threads sleep at once); on an
//    idle machine spinning won by 3%. Unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set, and
//    with more than one core, OMP_WAIT_POLICY=PASSIVE. (OMP_WAIT_POLICY=ACTIVE to spin.)
void ensure_fast_blas(int argc, char** argv);

// glibc's malloc serves blocks above its mmap threshold (adaptive, at most 32 MB) with
// fresh pages from mmap and unmaps them on free, and trims its heap as it frees; so each
// training step page-faulted its logits ([B*Q, V]: 82 MB at the reference shape), their
// gradient and log-probabilities back in, ~20k faults per such tensor (a fresh 82 MB exp()
// took 105 ms, 20 ms in reused memory). This fixes glibc's thresholds (heap below 32 MB,
// never trimmed) and installs a CPU allocator for LibTorch that keeps freed blocks of
// 32 MB and more and hands them out again for requests of exactly the same size (a
// training step repeats its shapes). A request no kept block fits first releases kept
// blocks, oldest first, of at least its size, so kept blocks never raise resident memory
// above the peak of live tensors: an evaluation at L = 4096 peaks as before.
// Measured on the reference config, 1 thread: 1230 instead of 1412 CPU ms per step.
// Call first thing in main(), before tensors exist. TXL_SYSTEM_MALLOC=1 disables it.
void reuse_freed_ram();

// What that allocator has handed out (CPU tensors made after reuse_freed_ram()): bytes
// live now, the most live since the last reset (all, and in blocks under 32 MB, which
// malloc's heap serves: runtime.h), and freed blocks it keeps for reuse.
// `counted` is false where it is not installed (TXL_SYSTEM_MALLOC=1, or not called).
struct TensorBytes {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t kept_bytes = 0;
  int64_t small_peak_bytes = 0;  // the most live at once in blocks malloc's heap serves
  bool counted = false;
};
TensorBytes tensor_bytes();
void reset_tensor_bytes_peak();
// Hands freed memory back to the system: the blocks kept for reuse and malloc's free heap
// pages, so that the resident size reads what is in use.
void release_free_ram();

struct BlasInfo {
  std::string library;    // path of the loaded libblas, e.g. .../openblas-openmp/libblas.so.3
  std::string kind;       // "openblas", "reference" or "unknown"
  std::string core_type;  // OpenBLAS's own report (openblas_get_corename), empty otherwise
  std::string warning;    // non-empty when the set-up is known to be slow, with the remedy
};
BlasInfo inspect_blas();

// std::thread::hardware_concurrency(), at least 1.
int logical_cores();

// Busy threads beyond this many per core only slow each other down, and a stop request then
// waits for a step that crawls (a study's --jobs 2 --threads 1024 on 2 cores logged no step
// in two minutes and took as long to stop).
inline constexpr int64_t kMaxThreadsPerCore = 2;

// The threads each of `processes` processes sharing this machine's cores uses when each asks
// for `requested`: 0 = an equal share of the cores (at least 1). A request whose total over
// the processes exceeds kMaxThreadsPerCore x the cores is capped at the equal share, and
// `warning` says so (it also warns when the processes alone exceed that many).
struct ThreadShare {
  int64_t threads = 1;
  std::string warning;  // empty when the request fits
};
ThreadShare share_cores(int64_t requested, int64_t processes);

// Sets LibTorch's intra-op threads to share_cores(requested, processes) (printing its
// warning, once per process). Returns the thread count in effect.
int set_threads(int64_t requested, int64_t processes = 1);

// Whether autocast is on for `type` (CPU or CUDA): one call for LibTorch 1.13 and 2.4+.
bool autocast_enabled(c10::DeviceType type);

// Enables autocast to bf16 on the device's type (CPU or CUDA) for its lifetime when precision
// is bf16; fp32 is a no-op. The first CPU bf16 guard of a process warns (once) when this CPU
// emulates bf16 (cpu.h): txl does not refuse bf16 there, but says what it costs.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, const c10::Device& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool previous_ = false;
};

}  // namespace txl
