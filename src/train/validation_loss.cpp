#include "txl/train/validation_loss.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "txl/eval/progress.h"
#include "txl/eval/protocol.h"
#include "txl/train/distributed.h"

namespace txl {

int64_t validation_tokens(int64_t valid_tokens, const Config& c, int64_t shards) {
  int64_t tokens = std::max<int64_t>(valid_tokens - 1, 0);
  if (c.train.eval_max_tokens > 0) tokens = std::min(tokens, c.train.eval_max_tokens);
  return (tokens + shards - 1) / std::max<int64_t>(shards, 1);
}

EvalResult validation_loss(TransformerLM& model, const std::vector<int32_t>& valid, const Config& c,
                           Distributed& dist, const std::string& label, double progress_seconds) {
  EvalRequest r = as_trained_request(c, model->has_memory());
  r.batch_tokens = std::max<int64_t>(c.eval.batch_tokens, c.train.tgt_len);
  r.max_tokens = c.train.eval_max_tokens;
  r.shard = dist.rank();
  r.shards = dist.world_size();
  std::optional<EvalProgressPrinter> printer;
  if (!label.empty() && dist.rank() == 0) {
    printer.emplace(label, progress_seconds,
                    validation_tokens(static_cast<int64_t>(valid.size()), c, dist.world_size()));
  }
  EvalResult result = evaluate(model, valid, r, printer ? printer->callback() : EvalProgressFn());
  result.nll = dist.sum(result.nll);
  result.tokens = static_cast<int64_t>(std::llround(dist.sum(static_cast<double>(result.tokens))));
  return result;
}

}  // namespace txl
