// The block-reusing CPU allocator behind reuse_freed_memory() (declared in runtime.h).
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <malloc.h>

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
// stay in its heap (see reuse_freed_memory), these come from mmap and are kept here.
constexpr int kMmapThreshold = 32 << 20;
constexpr size_t kMinKeptBytes = kMmapThreshold;

struct Block {
  void* data;
  size_t size;
};

class ReusingCpuAllocator final : public c10::Allocator {
 public:
  explicit ReusingCpuAllocator(c10::Allocator* small) : small_(small) {}

  c10::DataPtr allocate(size_t n) TXL_ALLOCATE_CONST override {
    if (n < kMinKeptBytes) return small_->allocate(n);
    void* data = take(n);
    if (data == nullptr) data = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[data] = n;
    }
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

 private:
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

  // Keeps a block this allocator handed out; anything else came from the small-block
  // (default) allocator, whose memory c10::free_cpu releases.
  static void release(void* data) {
    {
      std::lock_guard<std::mutex> lock(instance->mutex_);
      auto it = instance->sizes_.find(data);
      if (it != instance->sizes_.end()) {
        instance->kept_.push_back({data, it->second});
        instance->sizes_.erase(it);
        return;
      }
    }
    c10::free_cpu(data);
  }

  c10::Allocator* small_;
  mutable std::mutex mutex_;
  mutable std::list<Block> kept_;                    // freed blocks, oldest first
  mutable std::unordered_map<void*, size_t> sizes_;  // blocks handed out, by address
};

ReusingCpuAllocator* ReusingCpuAllocator::instance = nullptr;

}  // namespace

void reuse_freed_memory() {
  if (env_is("TXL_SYSTEM_MALLOC", "1")) return;
  if (ReusingCpuAllocator::instance != nullptr) return;
#if defined(__GLIBC__)
  // Fixed thresholds instead of glibc's adaptive ones: every block under 32 MB from the heap,
  // and freed heap memory is not handed back (trimmed) to be faulted in again next step.
  ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  ::mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
  // Never destroyed: tensors may be freed during static destruction at exit.
  ReusingCpuAllocator::instance = new ReusingCpuAllocator(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(ReusingCpuAllocator::instance, /*priority=*/1);
}

}  // namespace txl
