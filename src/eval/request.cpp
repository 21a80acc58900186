#include "txl/eval/request.h"

#include <spdlog/fmt/fmt.h>

#include "txl/eval/protocol.h"

namespace txl {

EvalRequest make_eval_request(const EvalSettings& s, int64_t length, int64_t batch_tokens,
                              int64_t train_len) {
  EvalRequest r;
  r.protocol = s.protocol;
  r.length = length;
  r.settings = s.protocol_settings;
  r.settings = resolved_settings(r);
  r.clamp_len = s.clamp_len;
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
