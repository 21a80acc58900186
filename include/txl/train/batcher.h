// Batching for recurrence: the token stream is cut into B equal contiguous streams, read
// tgt_len tokens at a time, so segment t+1 of stream b continues segment t of stream b and
// the memory carried between segments is meaningful.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "txl/config/config.h"

namespace txl {

// The segment length of training step `step` (1-based): train.tgt_len, or with
// train.tgt_len_max > 0 a length drawn uniformly from [tgt_len, tgt_len_max] by a hash of
// (train.seed, step), so a resumed run draws the same lengths.
int64_t segment_length(const TrainConfig& train, int64_t step);

// The longest segment training reads (what memory and stream checks must allow for).
inline int64_t longest_segment(const TrainConfig& train) {
  return std::max(train.tgt_len, train.tgt_len_max);
}

struct Segment {
  torch::Tensor inputs;   // [B, Q] int64
  torch::Tensor targets;  // [B, Q] int64, inputs shifted by one token
  bool starts_epoch;      // true on the first segment of a pass: memory must be reset
};

// The training split must give every stream at least 2 tokens and a whole segment:
// train.tgt_len inputs plus the token after them, so tgt_len <= train_tokens / batch_size - 1.
// InputError naming the key, its value and the largest allowed otherwise. Checked before a
// run directory is made; a segment longer than a stream would only be cut short (and make
// attention over the whole stream at once).
void check_training_streams(int64_t train_tokens, int64_t batch_size, int64_t tgt_len);

class StreamBatcher {
 public:
  // ids: the whole split, as check_training_streams requires. The streams are a view of it,
  // not a copy (WikiText-103's 103M tokens would take 0.8 GB more as int64), so `ids` must
  // outlive the batcher; each segment is made int64 as it is handed out.
  StreamBatcher(const std::vector<int32_t>& ids, int64_t batch_size, int64_t tgt_len);

  Segment next();  // wraps around to the start after the last full segment
  // A segment of `len` tokens (cut at the stream's end); memory stays valid because the
  // next one starts where this one ended.
  Segment next(int64_t len);

  int64_t stream_len() const { return streams_.size(1); }  // tokens per stream
  int64_t position() const { return position_; }           // offset of the next segment
  void set_position(int64_t position);                     // for exact resume
  int64_t segments_per_epoch() const;

 private:
  torch::Tensor streams_;  // [B, T] int32, over the caller's ids
  int64_t tgt_len_;
  int64_t position_ = 0;
};

}  // namespace txl
