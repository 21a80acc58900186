// The platform layer's run-time pieces: the block-reusing CPU allocator and parallel_chunks.
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "txl/platform/parallel.h"
#include "txl/platform/runtime.h"

namespace txl {
namespace {

TEST(ReuseFreedMemory, SameSizeGetsTheFreedBlockBackOtherSizesDoNot) {
  reuse_freed_ram();                     // what main() does; installs once
  const int64_t big = int64_t{9} << 20;  // 36 MB of float32: above the 32 MB kept minimum
  void* first = nullptr;
  {
    auto t = torch::empty({big});
    first = t.data_ptr();
  }
  auto again = torch::empty({big});
  EXPECT_EQ(again.data_ptr(), first) << "a freed block of the same size is handed out again";
  auto other = torch::empty({big + 1024});
  EXPECT_NE(other.data_ptr(), first);
  // Contents are whatever was there: the allocator must still give usable memory.
  again.fill_(2.0f);
  other.fill_(3.0f);
  EXPECT_EQ(again.sum().item<double>(), 2.0 * big);
  EXPECT_EQ(other.sum().item<double>(), 3.0 * (big + 1024));
}

TEST(ReuseFreedMemory, RawAllocationsRoundTrip) {
  reuse_freed_ram();
  // oneDNN's bf16 kernels allocate through raw_allocate / raw_deallocate.
  auto* allocator = c10::GetCPUAllocator();
  for (size_t bytes : {size_t{1} << 10, size_t{40} << 20}) {
    void* p = allocator->raw_allocate(bytes);
    ASSERT_NE(p, nullptr);
    static_cast<char*>(p)[bytes - 1] = 1;
    allocator->raw_deallocate(p);
  }
  void* again = allocator->raw_allocate(size_t{40} << 20);  // the kept block comes back
  allocator->raw_deallocate(again);
}

TEST(ParallelChunks, CoversTheRangeOnceAndRethrows) {
  const int saved = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_chunks(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
    }
    // Only the last chunk throws (on a worker thread when there are several).
    EXPECT_THROW(parallel_chunks(100, 1,
                                 [](int64_t, int64_t end) {
                                   if (end == 100) throw std::runtime_error("boom");
                                 }),
                 std::runtime_error);
  }
  at::set_num_threads(saved);
}

}  // namespace
}  // namespace txl
