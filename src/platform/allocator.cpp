// The block-reusing CPU allocator behind reuse_freed_ram() (declared in runtime.h).
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <malloc.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "txl/platform/runtime.h"
#include "txl/platform/torch_compat.h"
#include "txl/util/env.h"

// LibTorch 2.3 made Allocator::allocate non-const and added copy_data (used by clone()).
#if TXL_TORCH_AT_LEAST(2, 3)
#define TXL_ALLOCATE_CONST
#else
#define TXL_ALLOCATE_CONST const
#endif

namespace txl {

namespace {

// glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit): smaller blocks
// stay in its heap (see reuse_freed_ram), these come from mmap and are kept here.
constexpr int kMmapThreshold = 32 << 20;
constexpr size_t kMinKeptBytes = kMmapThreshold;

struct Block {
  void* data;
  size_t size;
};

class ReusingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) TXL_ALLOCATE_CONST override {
    if (n < kMinKeptBytes) {
      // As the default allocator does, counted by the block's usable size (known at free).
      void* data = c10::alloc_cpu(n);
      if (data != nullptr) count_live(static_cast<int64_t>(::malloc_usable_size(data)), true);
      return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
    }
    void* data = take(n);
    if (data == nullptr) data = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[data] = n;
    }
    count_live(static_cast<int64_t>(n), false);
    // Context = data, as the default allocator does: raw_allocate() relies on it.
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }

  // Allocator::clone() copies through this in LibTorch 2.3+ (an extra method before).
  void copy_data(void* dest, const void* src, size_t count) const {
    if (count > 0) std::memcpy(dest, src, count);
  }

  // raw_deallocate() (used by oneDNN's bf16 path) frees through this, for blocks of every size.
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  static ReusingCpuAllocator* instance;

  TensorBytes stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t kept = 0;
    for (const Block& b : kept_) kept += static_cast<int64_t>(b.size);
    return {live_.load(), peak_.load(), kept, small_peak_.load(), true};
  }
  void reset_peak() {
    peak_.store(live_.load());
    small_peak_.store(small_live_.load());
  }

  void release_kept() {
    std::list<Block> kept;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      kept.swap(kept_);
    }
    for (const Block& b : kept) c10::free_cpu(b.data);
  }

 private:
  static void raise_to(std::atomic<int64_t>& peak, int64_t now) {
    int64_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
  }
  void count_live(int64_t bytes, bool small) const {
    raise_to(peak_, live_.fetch_add(bytes) + bytes);
    if (small) raise_to(small_peak_, small_live_.fetch_add(bytes) + bytes);
  }

  // A kept block of exactly n bytes (the most recently freed), or nullptr after releasing
  // kept blocks, oldest first, until at least n bytes are handed back to the system.
  void* take(size_t n) const {
    std::vector<void*> to_free;
    void* found = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
        if (it->size == n) {
          found = it->data;
          kept_.erase(std::next(it).base());
          return found;
        }
      }
      size_t released = 0;
      while (!kept_.empty() && released < n) {
        released += kept_.front().size;
        to_free.push_back(kept_.front().data);
        kept_.pop_front();
      }
    }
    for (void* p : to_free) c10::free_cpu(p);
    return nullptr;
  }

  // Keeps a large block this allocator handed out; a small one goes back to malloc.
  static void release(void* data) {
    if (data == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(instance->mutex_);
      auto it = instance->sizes_.find(data);
      if (it != instance->sizes_.end()) {
        instance->live_ -= static_cast<int64_t>(it->second);
        instance->kept_.push_back({data, it->second});
        instance->sizes_.erase(it);
        return;
      }
    }
    const auto bytes = static_cast<int64_t>(::malloc_usable_size(data));
    instance->live_ -= bytes;
    instance->small_live_ -= bytes;
    c10::free_cpu(data);
  }

  mutable std::mutex mutex_;
  mutable std::list<Block> kept_;                    // freed blocks, oldest first
  mutable std::unordered_map<void*, size_t> sizes_;  // blocks handed out, by address
  mutable std::atomic<int64_t> live_{0};             // bytes of tensors not yet freed
  mutable std::atomic<int64_t> peak_{0};             // the most live_ has been
  mutable std::atomic<int64_t> small_live_{0};       // of live_, blocks under kMinKeptBytes
  mutable std::atomic<int64_t> small_peak_{0};       // the most small_live_ has been
};

ReusingCpuAllocator* ReusingCpuAllocator::instance = nullptr;

}  // namespace

TensorBytes tensor_bytes() {
  if (ReusingCpuAllocator::instance == nullptr) return {};
  return ReusingCpuAllocator::instance->stats();
}

void reset_tensor_bytes_peak() {
  if (ReusingCpuAllocator::instance != nullptr) ReusingCpuAllocator::instance->reset_peak();
}

void release_free_ram() {
  if (ReusingCpuAllocator::instance != nullptr) ReusingCpuAllocator::instance->release_kept();
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

void reuse_freed_ram() {
  if (env_is("TXL_SYSTEM_MALLOC", "1")) return;
  if (ReusingCpuAllocator::instance != nullptr) return;
#if defined(__GLIBC__)
  // Fixed thresholds instead of glibc's adaptive ones: every block under 32 MB from the heap,
  // and freed heap memory is not handed back (trimmed) to be faulted in again next step.
  ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  ::mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
  // Never destroyed: tensors may be freed during static destruction at exit.
  ReusingCpuAllocator::instance = new ReusingCpuAllocator();
  c10::SetCPUAllocator(ReusingCpuAllocator::instance, /*priority=*/1);
}

}  // namespace txl
