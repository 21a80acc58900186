#include "txl/eval/compare_runs.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "txl/config/encodings.h"
#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/protocol.h"
#include "txl/eval/text_documents.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

std::string vocab_summary(const LoadedRun& run) {
  return fmt::format("{} tokenizer, {} tokens, checksum {:016x}", to_string(run.vocab.kind()),
                     run.vocab.size(), run.vocab.checksum());
}

// The runs of a comparison, loaded and checked against the first one.
struct ComparedRuns {
  std::vector<RunSpec> specs;
  std::vector<LoadedRun> runs;
  std::string split;
  std::vector<int64_t> lengths;
  std::vector<bool> supported;                    // per run: some length is evaluated
  std::vector<std::vector<std::string>> skipped;  // per run and length: why not ("" = evaluated)
};

// The same run with the same aid twice (runs/a and ./runs/a/ alike) would be a difference
// paired against itself: refused, naming both arguments.
void refuse_repeated_runs(const std::vector<RunSpec>& specs) {
  std::vector<std::string> keys;
  for (const auto& spec : specs) keys.push_back(same_file_key(spec.dir) + spec.suffix);
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (keys[i] != keys[j]) continue;
      throw InputError(fmt::format(
          "run {} is given twice (arguments {} and {}): its columns would be identical and their "
          "difference paired against itself; give each run once (DIR@aid compares one run with "
          "an aid against itself without it)",
          specs[i].dir + specs[i].suffix, j + 1, i + 1));
    }
  }
}

// 1. The runs: complete and with the same vocabulary.
ComparedRuns load_compared_runs(const CompareOptions& o) {
  if (o.runs.empty()) throw InputError("txl compare needs at least one run directory");
  ComparedRuns c;
  for (const auto& arg : o.runs) c.specs.push_back(parse_run_spec(arg, o.settings));
  refuse_repeated_runs(c.specs);
  for (const auto& spec : c.specs) c.runs.push_back(load_run(spec.dir, o.checkpoint, o.device));
  for (size_t i = 1; i < c.runs.size(); ++i) {
    const TokenizerKind first = c.runs[0].vocab.kind();
    const TokenizerKind other = c.runs[i].vocab.kind();
    if (other != first) {
      throw InputError(
          "runs " + c.specs[0].dir + " (" + to_string(first) + " tokenizer, " +
          std::to_string(c.runs[0].vocab.size()) + " tokens) and " + c.specs[i].dir + " (" +
          to_string(other) + " tokenizer, " + std::to_string(c.runs[i].vocab.size()) +
          " tokens) use different tokenizers, so they have different vocabularies, their "
          "perplexities count different units and no pairing over the same windows exists; "
          "compare bits per byte instead (txl eval prints it for each run, and txl study "
          "reports it)");
    }
    if (c.runs[i].vocab.checksum() != c.runs[0].vocab.checksum()) {
      throw InputError("runs " + c.specs[0].dir + " and " + c.specs[i].dir +
                       " have different vocabularies (" + vocab_summary(c.runs[0]) + " vs " +
                       vocab_summary(c.runs[i]) +
                       "); compare needs runs trained with the same tokenizer on the same corpus");
    }
  }
  c.split = o.split.empty() ? c.runs[0].config.eval.split : o.split;
  c.lengths = o.lengths.empty() ? c.runs[0].config.eval.lengths : o.lengths;
  return c;
}

EvalRequest request_for(const ComparedRuns& c, size_t r, int64_t length) {
  return make_eval_request(c.specs[r].settings, length, c.runs[r].config.eval.batch_tokens,
                           training_length(c.runs[r].config));
}

// 2. Each run at each length: evaluated, n/a with the reason, or refused (request_unavailable,
// the decision eval and study make). A run with no length evaluated is an n/a column;
// nothing evaluated in any run is refused.
void plan_requests(ComparedRuns& c) {
  c.supported.assign(c.runs.size(), false);
  c.skipped.assign(c.runs.size(), {});
  std::string reasons;
  for (size_t r = 0; r < c.runs.size(); ++r) {
    for (const int64_t length : c.lengths) {
      c.skipped[r].push_back(
          request_unavailable(c.runs[r].config.model, request_for(c, r, length)));
      c.supported[r] = c.supported[r] || c.skipped[r].back().empty();
    }
    if (!c.supported[r])
      reasons += (reasons.empty() ? "" : "; ") + c.specs[r].dir + ": " +
                 skipped_reasons(c.lengths, c.skipped[r]);
  }
  if (std::none_of(c.supported.begin(), c.supported.end(), [](bool s) { return s; }))
    throw InputError("nothing to compare: " + reasons);
}

// The documents run r scores: the --text files (kTexts), or its corpus's split.
constexpr const char* kTexts = "--text";
std::string documents_key(const ComparedRuns& c, size_t r, const CompareOptions& o) {
  return o.texts.empty() ? c.runs[r].config.data.dir : kTexts;
}
using DocumentsByKey = std::map<std::string, std::vector<TextDocument>>;

// 3. What the runs score. --text: the files, read once with the runs' one vocabulary (step 1
// checked that they share it, so each run's tokenizer reads them the same). Otherwise the
// split of every run's corpus (runs on one corpus share it): the same token ids for all, or
// the runs would score different text.
DocumentsByKey load_documents(const ComparedRuns& c, const CompareOptions& o, EncodeStats& stats,
                              TokenCacheWrites& writes) {
  DocumentsByKey docs;
  if (!o.texts.empty()) {
    docs[kTexts] = load_text_documents(o.texts, c.runs[0].vocab, &stats, &writes);
    return docs;
  }
  uint64_t checksum0 = 0;
  for (size_t r = 0; r < c.runs.size(); ++r) {
    const auto& dir = c.runs[r].config.data.dir;
    if (!docs.count(dir)) {
      TextDocument split{"", c.split, {}, {}};
      split.ids = load_split(dir, c.split, c.runs[r].vocab, r == 0 ? &stats : nullptr, &writes);
      docs[dir].push_back(std::move(split));
    }
    const uint64_t sum = checksum_ids(docs[dir].front().ids);
    if (r == 0) checksum0 = sum;
    if (sum != checksum0) {
      throw InputError("runs " + c.specs[0].dir + " and " + c.specs[r].dir +
                       " would score different text: the " + c.split + " split of " +
                       c.runs[0].config.data.dir + " differs from that of " + dir);
    }
  }
  return docs;
}

// Every run at every length it is evaluated at must fit in memory, for every document,
// before the first is.
void check_runs_fit(const ComparedRuns& c, const DocumentsByKey& docs, const CompareOptions& o) {
  for (size_t r = 0; r < c.runs.size(); ++r) {
    if (!c.supported[r]) continue;
    for (const auto& d : docs.at(documents_key(c, r, o))) {
      for (size_t i = 0; i < c.lengths.size(); ++i) {
        if (c.skipped[r][i].empty())
          check_eval_fits(c.runs[r].model, request_for(c, r, c.lengths[i]),
                          static_cast<int64_t>(d.ids.size()));
      }
    }
  }
}

// 4. One run's column: every length through the run's cache (n/a where skipped), each
// document on its own and their total; `each` gets every length's per-document results.
CompareRun evaluate_column(ComparedRuns& c, size_t r, std::vector<TextDocument>& docs,
                           const CompareOptions& o, std::vector<std::vector<EvalResult>>& each) {
  auto& run = c.runs[r];
  CompareRun cr;
  cr.dir = c.specs[r].dir;
  cr.name = run_name(cr.dir) + c.specs[r].suffix;
  cr.supported = c.supported[r];
  if (!cr.supported) cr.unsupported = skipped_reasons(c.lengths, c.skipped[r]);
  cr.skipped = c.skipped[r];
  cr.identity =
      identify_run(run, fs::path(checkpoint_file(run.paths, o.checkpoint)).filename().string());
  if (!cr.supported) return cr;
  for (size_t i = 0; i < c.lengths.size(); ++i) {
    const int64_t length = c.lengths[i];
    EvalResult none;
    none.length = length;
    if (!cr.skipped[i].empty()) {
      cr.results.push_back(none);
      cr.cached.push_back(false);
      each.emplace_back(docs.size(), none);
      continue;
    }
    DocumentScores scores =
        score_documents(run, o.checkpoint, docs, request_for(c, r, length), o.read_cache, cr.name);
    cr.results.push_back(scores.total);
    cr.cached.push_back(scores.cached);
    each.push_back(std::move(scores.each));
    fmt::print(stderr, "  {} length {:>6}: ppl {:.3f} over {} tokens{}\n", cr.name, length,
               cr.results.back().ppl(), cr.results.back().tokens, scores.cached ? " (cached)" : "");
  }
  return cr;
}

// Where DIR@AID splits `arg`, or npos when it is a run directory as it stands: a path that
// exists (a folder may hold '@'), or one with no '@' in its last component. With several
// '@', the last after which the folder exists, else the first.
size_t aid_separator(const std::string& arg) {
  if (fs::exists(arg)) return std::string::npos;
  const size_t slash = arg.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  size_t first = std::string::npos, existing = std::string::npos;
  for (size_t at = arg.find('@', name); at != std::string::npos; at = arg.find('@', at + 1)) {
    if (first == std::string::npos) first = at;
    if (at > 0 && fs::is_directory(arg.substr(0, at))) existing = at;
  }
  return existing != std::string::npos ? existing : first;
}

}  // namespace

RunSpec parse_run_spec(const std::string& arg, const EvalSettings& base) {
  RunSpec spec{arg, "", base};
  const size_t at = aid_separator(arg);
  if (at == std::string::npos) return spec;
  const std::string tail = arg.substr(at + 1);
  const size_t colon = tail.find(':');
  const std::string name = tail.substr(0, colon);
  const auto names = extrapolation_aid_names();
  if (at == 0 || std::find(names.begin(), names.end(), name) == names.end()) {
    throw InputError(
        arg + ": no such run directory, and " +
        (at == 0 ? std::string("nothing names the run before '@'")
                 : "\"" + name + "\" after '@' is not an extrapolation aid") +
        "; expected DIR, DIR@AID or DIR@AID:FACTOR (one aid per run) with AID one of " +
        join(names));
  }
  spec.dir = arg.substr(0, at);
  spec.suffix = "@" + tail;
  spec.settings.aid = parse_extrapolation_aid(name, arg);
  if (colon != std::string::npos) {
    const std::string factor = tail.substr(colon + 1);
    const auto value = parse_aid_factor(factor);
    if (!value) {
      throw InputError(arg + ": the aid factor \"" + factor +
                       "\" is not valid; expected a number >= 1, e.g. " + spec.dir + "@" + name +
                       ":4");
    }
    spec.settings.aid_factor = *value;
  }
  return spec;
}

struct PreparedComparison::State {
  CompareOptions options;
  ComparedRuns runs;
  EncodeStats stats;
  TokenCacheWrites cache_writes;  // kept until every check, the caller's too, has passed
  DocumentsByKey documents;
  std::vector<int32_t> joined;  // several --text files joined, once the probes ask
};

PreparedComparison::PreparedComparison(const CompareOptions& o)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = o;
  check_text_options(o.texts, o.split);
  s.runs = load_compared_runs(o);
  plan_requests(s.runs);
  s.documents = load_documents(s.runs, o, s.stats, s.cache_writes);
  check_runs_fit(s.runs, s.documents, o);
}

PreparedComparison::~PreparedComparison() = default;

size_t PreparedComparison::runs() const { return state_->runs.runs.size(); }

LoadedEval PreparedComparison::loaded(size_t r) {
  State& s = *state_;
  const auto& docs = s.documents.at(documents_key(s.runs, r, s.options));
  if (docs.size() == 1) return {s.runs.runs[r], docs.front().ids, s.runs.lengths};
  if (s.joined.empty()) s.joined = joined_ids(docs);  // the probes read the files joined
  return {s.runs.runs[r], s.joined, s.runs.lengths};
}

void PreparedComparison::commit() { state_->cache_writes.commit(); }

CompareOutcome PreparedComparison::evaluate() {
  const CompareOptions& o = state_->options;
  ComparedRuns& runs = state_->runs;
  CompareOutcome out;
  out.stats = state_->stats;
  Comparison& c = out.comparison;
  c.data_dir = runs.runs[0].config.data.dir;
  c.corpus = run_name(c.data_dir);
  c.split = o.texts.empty() ? runs.split : "text";
  if (!o.texts.empty()) {
    c.corpus = fmt::format("{} text file(s)", o.texts.size());
    c.data_dir = join(o.texts);
  }
  c.tokenizer = to_string(runs.runs[0].config.data.tokenizer);
  c.bytes_per_token = bytes_per_token(out.stats);
  c.method = o.settings.protocol;
  c.precision = to_string(o.settings.precision);
  c.lengths = runs.lengths;
  c.per_position = o.per_position;
  for (const auto& d : state_->documents.begin()->second)
    if (!d.file.empty()) out.texts.push_back({d.file, d.stats.tokens, d.stats.unknown, {}});
  for (size_t r = 0; r < runs.runs.size(); ++r) {
    std::vector<std::vector<EvalResult>> each;  // per length, per document
    auto& docs = state_->documents.at(documents_key(runs, r, o));
    c.runs.push_back(evaluate_column(runs, r, docs, o, each));
    for (size_t k = 0; k < out.texts.size(); ++k) {
      out.texts[k].results.emplace_back();
      for (const auto& at_length : each) out.texts[k].results.back().push_back(at_length[k]);
    }
  }
  return out;
}

CompareOutcome compare_runs(const CompareOptions& options) {
  PreparedComparison prepared(options);
  prepared.commit();
  return prepared.evaluate();
}

PlotSpec comparison_plot(const Comparison& c) {
  PlotSpec spec;
  spec.title = fmt::format("{}: perplexity vs evaluated length (method {}, {} split)", c.corpus,
                           c.method, c.split);
  spec.xlabel = "evaluated length L (tokens, log2 scale)";
  spec.ylabel = "perplexity";
  spec.mark_label = "trained at {}";
  for (const auto& run : c.runs) {
    if (!run.supported) continue;
    PlotSeries s;
    s.label = fmt::format("{} ({})", run.name, run.identity.encoding);
    for (size_t i = 0; i < run.results.size(); ++i) {
      if (!run.evaluated(i)) continue;  // past a learned table
      const auto& e = run.results[i];
      const auto ci = mean_nll_interval(e, c.bootstrap);
      s.x.push_back(e.length);
      s.y.push_back(e.ppl());
      s.lo.push_back(ci.valid ? std::exp(ci.lo) : e.ppl());
      s.hi.push_back(ci.valid ? std::exp(ci.hi) : e.ppl());
    }
    spec.series.push_back(s);
    if (std::find(spec.marks.begin(), spec.marks.end(), run.identity.train_length) ==
        spec.marks.end()) {
      spec.marks.push_back(run.identity.train_length);
    }
  }
  return spec;
}

}  // namespace txl
