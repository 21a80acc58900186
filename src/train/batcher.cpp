#include "txl/train/batcher.h"

#include "txl/util/error.h"

namespace txl {

void check_training_streams(int64_t train_tokens, int64_t batch_size, int64_t tgt_len) {
  const int64_t per_stream = train_tokens / batch_size;
  if (per_stream < 2) {
    throw InputError("the training split has " + std::to_string(train_tokens) +
                     " tokens, too few for train.batch_size = " + std::to_string(batch_size) +
                     " streams (need at least 2 tokens per stream)");
  }
  if (tgt_len > per_stream - 1) {
    throw InputError("train.tgt_len (" + std::to_string(tgt_len) +
                     ") is longer than a training stream: the training split's " +
                     std::to_string(train_tokens) + " tokens / train.batch_size " +
                     std::to_string(batch_size) + " = " + std::to_string(per_stream) +
                     " tokens per stream, so train.tgt_len can be at most " +
                     std::to_string(per_stream - 1) +
                     " (the last target is the token after the segment); lower train.tgt_len "
                     "or train.batch_size");
  }
}

StreamBatcher::StreamBatcher(const std::vector<int32_t>& ids, int64_t batch_size, int64_t tgt_len)
    : tgt_len_(tgt_len) {
  check_training_streams(static_cast<int64_t>(ids.size()), batch_size, tgt_len);
  const int64_t per_stream = static_cast<int64_t>(ids.size()) / batch_size;
  streams_ = torch::from_blob(const_cast<int32_t*>(ids.data()), {batch_size, per_stream},
                              torch::kInt32);  // [B, T]
}

int64_t StreamBatcher::segments_per_epoch() const {
  return (stream_len() - 1 + tgt_len_ - 1) / tgt_len_;
}

void StreamBatcher::set_position(int64_t position) {
  TORCH_CHECK(position >= 0 && position < stream_len() - 1, "stream position ", position,
              " out of range [0, ", stream_len() - 1, ")");
  position_ = position;
}

int64_t segment_length(const TrainConfig& train, int64_t step) {
  if (train.tgt_len_max <= train.tgt_len) return train.tgt_len;
  // splitmix64 of (seed, step): independent of every other random stream of the run.
  uint64_t z = static_cast<uint64_t>(train.seed) * 0x9E3779B97F4A7C15ULL +
               static_cast<uint64_t>(step) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const uint64_t span = static_cast<uint64_t>(train.tgt_len_max - train.tgt_len + 1);
  return train.tgt_len + static_cast<int64_t>(z % span);
}

Segment StreamBatcher::next() { return next(tgt_len_); }

Segment StreamBatcher::next(int64_t want) {
  const int64_t len = std::min(want, stream_len() - 1 - position_);
  Segment s;
  s.starts_epoch = position_ == 0;
  s.inputs = streams_.narrow(1, position_, len).to(torch::kInt64);       // [B, Q]
  s.targets = streams_.narrow(1, position_ + 1, len).to(torch::kInt64);  // [B, Q]
  position_ += len;
  if (position_ >= stream_len() - 1) position_ = 0;
  return s;
}

}  // namespace txl
