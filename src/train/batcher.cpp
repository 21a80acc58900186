#include "txl/train/batcher.h"

#include "txl/util/error.h"

namespace txl {

StreamBatcher::StreamBatcher(const std::vector<int32_t>& ids, int64_t batch_size, int64_t tgt_len)
    : tgt_len_(tgt_len) {
  const int64_t per_stream = static_cast<int64_t>(ids.size()) / batch_size;
  if (per_stream < 2) {
    throw InputError("the training split has " + std::to_string(ids.size()) +
                     " tokens, too few for train.batch_size = " + std::to_string(batch_size) +
                     " streams (need at least 2 tokens per stream)");
  }
  auto all =
      torch::from_blob(const_cast<int32_t*>(ids.data()), {per_stream * batch_size}, torch::kInt32);
  streams_ = all.to(torch::kInt64).view({batch_size, per_stream}).contiguous();  // [B, T]
}

int64_t StreamBatcher::segments_per_epoch() const {
  return (stream_len() - 1 + tgt_len_ - 1) / tgt_len_;
}

void StreamBatcher::set_position(int64_t position) {
  TORCH_CHECK(position >= 0 && position < stream_len() - 1, "stream position ", position,
              " out of range [0, ", stream_len() - 1, ")");
  position_ = position;
}

Segment StreamBatcher::next() {
  const int64_t len = std::min(tgt_len_, stream_len() - 1 - position_);
  Segment s;
  s.starts_epoch = position_ == 0;
  s.inputs = streams_.narrow(1, position_, len);       // [B, Q]
  s.targets = streams_.narrow(1, position_ + 1, len);  // [B, Q]
  position_ += len;
  if (position_ >= stream_len() - 1) position_ = 0;
  return s;
}

}  // namespace txl
