#include "txl/eval/request.h"

namespace txl {

EvalRequest make_eval_request(const EvalSettings& s, int64_t length, int64_t batch_tokens,
                              int64_t train_len) {
  EvalRequest r;
  r.method = s.method;
  r.length = length;
  r.stride = s.stride;
  r.mem_len = s.mem_len >= 0 ? s.mem_len : length;
  r.clamp_len = s.clamp_len;
  r.streams = s.streams;
  r.batch_tokens = batch_tokens;
  r.max_tokens = s.max_tokens;
  r.precision = s.precision;
  r.position_buckets = kPositionBuckets;
  r.aid = s.aid;
  r.aid_factor = s.aid_factor;
  r.train_len = train_len;
  return r;
}

}  // namespace txl
