// Splitting a count into contiguous blocks, as shards split their work.
#pragma once

#include <cstdint>
#include <utility>

namespace txl {

// Block `index` of `blocks` contiguous blocks of `count` units: [count*i/n, count*(i+1)/n),
// every unit in exactly one block. What validation's shards (eval/protocol.h, shard_block)
// and the probes' shards (probe/probe_shard.h) take.
inline std::pair<int64_t, int64_t> contiguous_block(int64_t count, int64_t index, int64_t blocks) {
  return {count * index / blocks, count * (index + 1) / blocks};
}

}  // namespace txl
