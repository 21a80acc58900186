#include "txl/train/validation_loss.h"

#include <algorithm>
#include <cmath>

#include "txl/eval/protocol.h"
#include "txl/train/distributed.h"

namespace txl {

EvalResult validation_loss(TransformerLM& model, const std::vector<int32_t>& valid, const Config& c,
                           Distributed& dist) {
  EvalRequest r = as_trained_request(c, model->has_memory());
  r.batch_tokens = std::max<int64_t>(c.eval.batch_tokens, c.train.tgt_len);
  r.max_tokens = c.train.eval_max_tokens;
  r.shard = dist.rank();
  r.shards = dist.world_size();
  EvalResult result = evaluate(model, valid, r);
  result.nll = dist.sum(result.nll);
  result.tokens = static_cast<int64_t>(std::llround(dist.sum(static_cast<double>(result.tokens))));
  return result;
}

}  // namespace txl
