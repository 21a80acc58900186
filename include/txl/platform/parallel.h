// Splitting a loop over LibTorch's intra-op threads from code compiled without -fopenmp.
//
// at::parallel_for is a header template whose `#pragma omp parallel` only takes effect in
// files compiled with -fopenmp, which our targets are not; without it the loop silently
// runs on one thread. This calls the OpenMP runtime LibTorch already loaded (GOMP_parallel,
// the entry point GCC compiles that pragma to; libgomp, LLVM's libomp and Intel's libiomp5
// all export it), found at run time so nothing extra is linked.
#pragma once

#include <cstdint>
#include <functional>

namespace txl {

// Calls f(begin, end) on disjoint chunks covering [0, n), one chunk per thread of
// at::get_num_threads() (fewer when n / grain is small), and waits for all of them.
// Runs f(0, n) on the calling thread when n <= grain, when only one thread is set, when
// already inside a parallel region, or when no OpenMP runtime is loaded. The first
// exception thrown by any chunk is rethrown.
void parallel_chunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

}  // namespace txl
