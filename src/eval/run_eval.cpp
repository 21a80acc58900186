#include "txl/eval/run_eval.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/progress.h"
#include "txl/eval/protocol.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"

namespace txl {

PreparedEval::PreparedEval(const RunEvalOptions& o, bool check_lengths)
    : options_(o),
      run_(load_run(o.run_dir, o.checkpoint, o.device)),
      split_(o.split.empty() ? run_.config.eval.split : o.split),
      lengths_(o.lengths.empty() ? run_.config.eval.lengths : o.lengths) {
  if (check_lengths)
    decide_lengths();
  else
    skipped_.assign(lengths_.size(), "");
  ids_ = load_split(run_.config.data.dir, split_, run_.vocab, &stats_, &cache_writes_);
  if (check_lengths) {
    // Every length evaluated must fit in memory before the first one is.
    for (size_t i = 0; i < lengths_.size(); ++i) {
      if (skipped_[i].empty())
        check_eval_fits(run_.model, request(lengths_[i]), static_cast<int64_t>(ids_.size()));
    }
  }
}

// Each length evaluated or n/a with the reason (request_unavailable); a refused request, or
// nothing left to evaluate, is an InputError.
void PreparedEval::decide_lengths() {
  for (const int64_t length : lengths_)
    skipped_.push_back(request_unavailable(run_.config.model, request(length)));
  if (std::all_of(skipped_.begin(), skipped_.end(), [](const auto& s) { return !s.empty(); }))
    throw InputError("nothing to evaluate: " + skipped_reasons(lengths_, skipped_));
}

EvalRequest PreparedEval::request(int64_t length) const {
  return make_eval_request(options_.settings, length, run_.config.eval.batch_tokens,
                           training_length(run_.config));
}

RunEvalOutcome PreparedEval::evaluate() {
  RunEvalOutcome out;
  out.stats = stats_;
  CachedEvaluator evaluator(run_, options_.checkpoint, split_, ids_, options_.read_cache);
  EvalReport& report = out.report;
  report.run = options_.run_dir;
  report.split = split_;
  report.identity = identify_run(run_, evaluator.subject().checkpoint);
  report.tokenizer = to_string(run_.config.data.tokenizer);
  report.precision = to_string(options_.settings.precision);
  report.per_position = options_.per_position;
  report.bytes_per_token = bytes_per_token(stats_);
  report.skipped = skipped_;
  for (size_t i = 0; i < lengths_.size(); ++i) {
    const int64_t length = lengths_[i];
    if (!skipped_[i].empty()) {
      report.results.push_back(EvalResult{});
      report.results.back().length = length;
      report.cached.push_back(false);
      fmt::print(stderr, "  length {:>6}: n/a ({})\n", length, skipped_[i]);
      continue;
    }
    bool cached = false;
    EvalProgressPrinter progress(fmt::format("length {}", length));
    report.results.push_back(evaluator.evaluate(request(length), &cached, progress.callback()));
    report.cached.push_back(cached);
    const auto& r = report.results.back();
    fmt::print(stderr, "  length {:>6}: ppl {:.3f} over {} tokens{}\n", length, r.ppl(), r.tokens,
               cached ? " (cached)" : "");
  }
  return out;
}

RunEvalOutcome evaluate_run(const RunEvalOptions& options) {
  PreparedEval prepared(options);
  prepared.commit();
  return prepared.evaluate();
}

}  // namespace txl
