#include "txl/eval/run_eval.h"

#include <spdlog/fmt/fmt.h>

#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/eval_memory.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/progress.h"
#include "txl/run/run_dir.h"

namespace txl {

RunEvalOutcome evaluate_run(const RunEvalOptions& o) {
  auto run = load_run(o.run_dir, o.checkpoint, o.device);
  const std::string split = o.split.empty() ? run.config.eval.split : o.split;
  const auto lengths = o.lengths.empty() ? run.config.eval.lengths : o.lengths;
  const int64_t batch_tokens = run.config.eval.batch_tokens;
  auto request = [&](int64_t length) {
    return make_eval_request(o.settings, length, batch_tokens, training_length(run.config));
  };
  for (const int64_t length : lengths) check_eval_request(run.model, request(length));

  RunEvalOutcome out;
  TokenCacheWrites cache_writes;  // kept until the checks below pass
  const auto ids = load_split(run.config.data.dir, split, run.vocab, &out.stats, &cache_writes);
  // Every length must fit in memory before the first one is evaluated.
  for (const int64_t length : lengths)
    check_eval_fits(run.model, request(length), static_cast<int64_t>(ids.size()));
  const LoadedEval loaded{run, ids, lengths};
  if (o.extension.check) o.extension.check(loaded);
  cache_writes.commit();

  CachedEvaluator evaluator(run, o.checkpoint, split, ids, o.read_cache);
  EvalReport& report = out.report;
  report.run = o.run_dir;
  report.split = split;
  report.encoding = to_string(run.config.model.pos_encoding);
  report.tokenizer = to_string(run.config.data.tokenizer);
  report.train_length = run.config.train.tgt_len;
  report.checkpoint = evaluator.subject().checkpoint;
  report.checkpoint_step = run.state.step;
  report.origin = describe_origin(run.paths);
  report.precision = to_string(o.settings.precision);
  report.per_position = o.per_position;
  report.bytes_per_token = bytes_per_token(out.stats);
  for (const int64_t length : lengths) {
    bool cached = false;
    EvalProgressPrinter progress(fmt::format("length {}", length));
    report.results.push_back(evaluator.evaluate(request(length), &cached, progress.callback()));
    report.cached.push_back(cached);
    const auto& r = report.results.back();
    fmt::print(stderr, "  length {:>6}: ppl {:.3f} over {} tokens{}\n", length, r.ppl(), r.tokens,
               cached ? " (cached)" : "");
  }
  if (o.extension.run) o.extension.run(loaded);
  return out;
}

void run_extension_alone(const RunEvalOptions& o) {
  auto run = load_run(o.run_dir, o.checkpoint, o.device);
  const std::string split = o.split.empty() ? run.config.eval.split : o.split;
  const auto lengths = o.lengths.empty() ? run.config.eval.lengths : o.lengths;
  EncodeStats stats;
  TokenCacheWrites cache_writes;  // kept until the checks below pass
  const auto ids = load_split(run.config.data.dir, split, run.vocab, &stats, &cache_writes);
  const LoadedEval loaded{run, ids, lengths};
  if (o.extension.check) o.extension.check(loaded);
  cache_writes.commit();
  if (o.extension.run) o.extension.run(loaded);
}

}  // namespace txl
