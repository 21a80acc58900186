#include "txl/eval/text_documents.h"

#include <spdlog/fmt/fmt.h>

#include <map>

#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/progress.h"
#include "txl/util/error.h"
#include "txl/util/hash.h"

namespace txl {

void check_text_options(const std::vector<std::string>& texts, const std::string& split) {
  if (texts.empty()) return;
  if (!split.empty())
    throw InputError("--split " + split + " and --text both say what to score; give one");
  int stdin_count = 0;
  for (const auto& t : texts) stdin_count += t == "-";
  if (stdin_count > 1) throw InputError("--text - (standard input) can be given once");
}

std::vector<TextDocument> load_text_documents(const std::vector<std::string>& files,
                                              const Vocab& vocab, EncodeStats* total,
                                              TokenCacheWrites* writes) {
  std::vector<TextDocument> documents;
  for (const auto& file : files) {
    TextDocument d;
    d.file = file;
    d.ids = load_text(file, vocab, &d.stats, writes);
    d.label = "text-" + hex64(checksum_ids(d.ids)).substr(0, 12);
    if (total != nullptr) {
      total->tokens += d.stats.tokens;
      total->unknown += d.stats.unknown;
      total->bytes += d.stats.bytes;
    }
    documents.push_back(std::move(d));
  }
  return documents;
}

std::vector<int32_t> joined_ids(const std::vector<TextDocument>& documents) {
  std::vector<int32_t> ids;
  for (const auto& d : documents) ids.insert(ids.end(), d.ids.begin(), d.ids.end());
  return ids;
}

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

DocumentScores score_documents(LoadedRun& run, const std::string& which,
                               std::vector<TextDocument>& documents, const EvalRequest& request,
                               bool read_cache, const std::string& name,
                               std::vector<PerTokenScores>* per_token) {
  DocumentScores out;
  for (size_t k = 0; k < documents.size(); ++k) {
    TextDocument& d = documents[k];
    CachedEvaluator evaluator(run, which, d.label, d.ids, read_cache);
    if (k == 0) out.checkpoint = evaluator.subject().checkpoint;
    const std::string what = fmt::format("{}{}length {}", name.empty() ? "" : name + " ",
                                         d.file.empty() ? "" : d.file + " at ", request.length);
    EvalProgressPrinter progress(what);
    bool hit = false;
    EvalResult r;
    if (per_token == nullptr) {
      r = evaluator.evaluate(request, &hit, progress.callback());
    } else {  // every token's NLL: evaluated, never read from the cache
      per_token->push_back({request.length, d.file.empty() ? d.label : d.file, &d.ids, {}});
      r = evaluate(run.model, d.ids, request, progress.callback(), &per_token->back().scores);
    }
    out.cached = out.cached && hit;
    out.each.push_back(r);
    add_result(out.total, r);
  }
  return out;
}

std::string unknown_warning(const std::string& file, int64_t tokens, int64_t unknown) {
  const double rate = tokens > 0 ? double(unknown) / double(tokens) : 0.0;
  if (rate <= kUnkWarning) return "";
  return fmt::format(
      "warning: {}: {:.1f}% of its tokens ({} of {}) are not in the run's vocabulary and were "
      "scored as <unk>; a perplexity over so many <unk> says little about the model\n",
      file, 100 * rate, unknown, tokens);
}

}  // namespace txl
