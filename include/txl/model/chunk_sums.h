// A sum that parallel chunks (parallel_chunks) add to, the same to the last bit however the
// threads are timed, at a fixed number of threads.
//
// Float addition is not associative: a shared sum that each chunk adds its part to under a
// lock comes out in the order the threads got there, and differs in its last bits from run
// to run. That made training at 2 threads differ between two runs of the same seed (issue
// 54: the output bias's and the attention bias's gradients). Here each chunk adds its terms
// to a partial of its own, in its own (fixed) order, and add_to() adds the partials in the
// chunks' order.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace txl {

class ChunkSums {
 public:
  // Partials are zeros shaped and typed like `like`.
  explicit ChunkSums(torch::Tensor like) : like_(std::move(like)) {}

  // The partial of the chunk that starts at `begin` (zeros when first asked for); a chunk's
  // thread may add to it without a lock.
  torch::Tensor partial(int64_t begin) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = partials_.find(begin);
    if (found == partials_.end()) found = partials_.emplace(begin, torch::zeros_like(like_)).first;
    return found->second;
  }

  // total += every partial, in the order of the chunks' starts; after the parallel section.
  void add_to(torch::Tensor& total) const {
    for (const auto& [begin, part] : partials_) total.add_(part);
  }

 private:
  torch::Tensor like_;
  std::mutex mutex_;
  std::map<int64_t, torch::Tensor> partials_;  // chunk start -> its partial sum
};

}  // namespace txl
