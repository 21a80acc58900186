#include "txl/platform/parallel.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <exception>
#include <mutex>

namespace txl {

namespace {

using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
using OmpInt = int (*)();

struct OpenMp {
  GompParallel parallel = nullptr;
  OmpInt thread_num = nullptr;
  OmpInt in_parallel = nullptr;
};

const OpenMp& openmp() {
  static const OpenMp api = [] {
    OpenMp a;
    a.parallel = reinterpret_cast<GompParallel>(::dlsym(RTLD_DEFAULT, "GOMP_parallel"));
    a.thread_num = reinterpret_cast<OmpInt>(::dlsym(RTLD_DEFAULT, "omp_get_thread_num"));
    a.in_parallel = reinterpret_cast<OmpInt>(::dlsym(RTLD_DEFAULT, "omp_in_parallel"));
    if (!a.thread_num || !a.in_parallel) a.parallel = nullptr;
    return a;
  }();
  return api;
}

struct Job {
  const std::function<void(int64_t, int64_t)>* f;
  int64_t n;
  int64_t chunks;
  OmpInt thread_num;
  std::mutex error_mutex;
  std::exception_ptr error;
};

void run_chunk(void* data) {
  auto* job = static_cast<Job*>(data);
  const int64_t tid = job->thread_num();
  // Threads beyond `chunks` (the team may be larger) have nothing to do.
  if (tid >= job->chunks) return;
  const int64_t size = (job->n + job->chunks - 1) / job->chunks;
  const int64_t begin = tid * size;
  const int64_t end = std::min(job->n, begin + size);
  if (begin >= end) return;
  try {
    (*job->f)(begin, end);
  } catch (...) {
    std::lock_guard<std::mutex> lock(job->error_mutex);
    if (!job->error) job->error = std::current_exception();
  }
}

}  // namespace

void parallel_chunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  const auto& api = openmp();
  const int64_t threads = at::get_num_threads();
  const int64_t chunks = std::min<int64_t>(
      threads, (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || api.parallel == nullptr || api.in_parallel() != 0) {
    f(0, n);
    return;
  }
  Job job{&f, n, chunks, api.thread_num, {}, nullptr};
  // Team size 0 = the runtime's default (at::set_num_threads sets it), as at::parallel_for
  // does: asking for varying team sizes makes GOMP rebuild its thread pool (pytorch#32008).
  api.parallel(&run_chunk, &job, 0, 0);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace txl
