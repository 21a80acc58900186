#include "txl/eval/run_eval.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <map>

#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/progress.h"
#include "txl/eval/protocol.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/hash.h"

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
    Document split{"", split_, {}, {}};
    split.ids = load_split(run_.config.data.dir, split_, run_.vocab, &split.stats, &cache_writes_);
    stats_ = split.stats;
    documents_.push_back(std::move(split));
    return;
  }
  split_ = "text";
  for (const auto& file : options_.texts) {
    Document d;
    d.file = file;
    d.ids = load_text(file, run_.vocab, &d.stats, &cache_writes_);
    // The cache knows a text by its tokens' checksum, never by its file's name.
    d.label = "text-" + hex64(checksum_ids(d.ids)).substr(0, 12);
    stats_.tokens += d.stats.tokens;
    stats_.unknown += d.stats.unknown;
    stats_.bytes += d.stats.bytes;
    documents_.push_back(std::move(d));
  }
}

namespace {

// `r`'s windows after `total`'s: the total over documents scored one after the other.
void add_result(EvalResult& total, const EvalResult& r) {
  if (total.tokens == 0 && total.window_nll.empty()) {
    total = r;
    return;
  }
  total.tokens += r.tokens;
  total.nll += r.nll;
  total.window_nll.insert(total.window_nll.end(), r.window_nll.begin(), r.window_nll.end());
  total.window_tokens.insert(total.window_tokens.end(), r.window_tokens.begin(),
                             r.window_tokens.end());
  // Buckets by the window position they start at, a mean weighted by count. A document
  // shorter than the length has narrower buckets (its window is shorter): every bucket of
  // either is kept, so the counts still add up to the tokens.
  std::map<int64_t, std::pair<double, int64_t>> buckets;  // start -> (NLL sum, tokens)
  for (const EvalResult* e : std::initializer_list<const EvalResult*>{&total, &r}) {
    for (size_t b = 0; b < e->position_start.size(); ++b) {
      auto& [sum, count] = buckets[e->position_start[b]];
      sum += e->position_nll[b] * static_cast<double>(e->position_count[b]);
      count += e->position_count[b];
    }
  }
  total.position_start.clear();
  total.position_nll.clear();
  total.position_count.clear();
  for (const auto& [start, bucket] : buckets) {
    total.position_start.push_back(start);
    total.position_nll.push_back(bucket.first / static_cast<double>(bucket.second));
    total.position_count.push_back(bucket.second);
  }
}

}  // namespace

EvalResult PreparedEval::evaluate_documents(int64_t length, bool* cached, EvalReport& report) {
  EvalResult total;
  *cached = true;
  for (size_t k = 0; k < documents_.size(); ++k) {
    Document& d = documents_[k];
    CachedEvaluator evaluator(run_, options_.checkpoint, d.label, d.ids, options_.read_cache);
    if (k == 0) report.identity = identify_run(run_, evaluator.subject().checkpoint);
    const std::string what = d.file.empty() ? fmt::format("length {}", length)
                                            : fmt::format("{} at length {}", d.file, length);
    EvalProgressPrinter progress(what);
    bool hit = false;
    EvalResult r;
    if (options_.per_token.empty()) {
      r = evaluator.evaluate(request(length), &hit, progress.callback());
    } else {  // every token's NLL: evaluated, never read from the cache
      per_token_.push_back({length, d.file.empty() ? d.label : d.file, &d.ids, {}});
      r = txl::evaluate(run_.model, d.ids, request(length), progress.callback(),
                        &per_token_.back().scores);
    }
    *cached = *cached && hit;
    if (!d.file.empty()) report.documents[k].results.push_back(r);
    add_result(total, r);
  }
  return total;
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
