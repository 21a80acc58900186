#include "txl/eval/run_eval.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/data/corpus.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/evaluate.h"
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
  load_documents();
  if (check_lengths) {
    // Every length evaluated must fit in memory, for every document, before the first one is.
    for (size_t i = 0; i < lengths_.size(); ++i) {
      if (!skipped_[i].empty()) continue;
      for (const auto& d : documents_)
        check_eval_fits(run_.model, request(lengths_[i]), static_cast<int64_t>(d.ids.size()));
    }
  }
}

void PreparedEval::load_documents() {
  if (options_.texts.empty()) {
    TextDocument split{"", split_, {}, {}};
    split.ids = load_split(run_.config.data.dir, split_, run_.vocab, &split.stats, &cache_writes_);
    stats_ = split.stats;
    documents_.push_back(std::move(split));
    return;
  }
  split_ = "text";
  documents_ = load_text_documents(options_.texts, run_.vocab, &stats_, &cache_writes_);
}

LoadedEval PreparedEval::loaded() {
  if (documents_.size() == 1) return {run_, documents_.front().ids, lengths_};
  // Several --text files: the probes read them joined in order, one stream.
  if (joined_.empty()) joined_ = joined_ids(documents_);
  return {run_, joined_, lengths_};
}

EvalResult PreparedEval::evaluate_documents(int64_t length, bool* cached, EvalReport& report) {
  DocumentScores scores =
      score_documents(run_, options_.checkpoint, documents_, request(length), options_.read_cache,
                      "", options_.per_token.empty() ? nullptr : &per_token_);
  report.identity = identify_run(run_, scores.checkpoint);
  *cached = scores.cached;
  for (size_t k = 0; k < report.documents.size(); ++k)
    report.documents[k].results.push_back(scores.each[k]);
  return scores.total;
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
  EvalReport& report = out.report;
  report.run = options_.run_dir;
  report.split = split_;
  for (const auto& d : documents_)
    if (!d.file.empty()) report.documents.push_back({d.file, d.stats.tokens, d.stats.unknown, {}});
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
      for (auto& d : report.documents) d.results.push_back(report.results.back());
      report.cached.push_back(false);
      fmt::print(stderr, "  length {:>6}: n/a ({})\n", length, skipped_[i]);
      continue;
    }
    bool cached = false;
    report.results.push_back(evaluate_documents(length, &cached, report));
    report.cached.push_back(cached);
    const auto& r = report.results.back();
    fmt::print(stderr, "  length {:>6}: ppl {:.3f} over {} tokens{}\n", length, r.ppl(), r.tokens,
               cached ? " (cached)" : "");
  }
  if (!options_.per_token.empty()) write_per_token(options_.per_token, run_.vocab, per_token_);
  return out;
}

RunEvalOutcome evaluate_run(const RunEvalOptions& options) {
  PreparedEval prepared(options);
  prepared.commit();
  return prepared.evaluate();
}

}  // namespace txl
