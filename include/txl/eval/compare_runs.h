// The `txl compare` workflow as a library call: load the runs, check that they can be
// compared (same vocabulary, same text to score, the method and lengths apply), evaluate
// each through its cache, and return the Comparison (compare.h) that the command prints,
// writes as JSON and plots. Every check comes before any evaluation: a refusal is an
// InputError and writes nothing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "txl/data/tokenizer.h"
#include "txl/eval/compare.h"
#include "txl/eval/plot.h"
#include "txl/eval/request.h"
#include "txl/eval/run_eval.h"

namespace txl {

// One run argument: DIR, DIR@aid or DIR@aid:factor (that run evaluated with that aid, so
// one run can stand in several columns). A path that exists is a run directory as it stands
// (a folder's name may hold '@'); otherwise the text after the '@' of its last component
// must be an aid: an unknown one (runs/rope@bogus, runs/rope@, runs/rope@pi@ntk) is an
// InputError naming it.
struct RunSpec {
  std::string dir;
  std::string suffix;  // "@aid..." as given, appended to the column's name ("" without one)
  EvalSettings settings;
};
RunSpec parse_run_spec(const std::string& arg, const EvalSettings& base);

// The plan's settings hold for every run; a run given as DIR@aid replaces the aid. With
// texts (--text), the runs score those files instead of a split: each a document of its own,
// the columns their total; the runs share one vocabulary (as on a split), so the files are
// read once with it and every run scores the same tokens in the same windows. Refused as
// txl eval refuses them (text_documents.h, load_text), before any evaluation.
struct CompareOptions : EvalPlan {
  std::vector<std::string> runs;  // parse_run_spec arguments, at least one
};

// With --text: one file, its tokens and <unk>s, and each run's result per length on it alone
// (an n/a length's result is empty).
struct CompareText {
  std::string file;
  int64_t tokens = 0, unknown = 0;
  std::vector<std::vector<EvalResult>> results;  // per run, per length
};

struct CompareOutcome {
  Comparison comparison;
  EncodeStats stats;  // the first run's split (or every --text file): tokens scored as <unk>
  std::vector<CompareText> texts;  // with --text: per file, in order
};

// The comparison in its two phases, so that a caller can add checks of its own between them
// (the probes' plan, per run): constructing it loads and checks every run (same vocabulary,
// same text, the method and lengths apply and fit in memory); the token cache's new entries
// are held until commit(). evaluate() then scores every run's column, printing one line per
// evaluated length on stderr (and progress for long ones).
class PreparedComparison {
 public:
  explicit PreparedComparison(const CompareOptions& options);
  ~PreparedComparison();
  PreparedComparison(const PreparedComparison&) = delete;
  PreparedComparison& operator=(const PreparedComparison&) = delete;

  size_t runs() const;
  // Run r as given (its split or the --text files joined in order, the compared lengths).
  LoadedEval loaded(size_t r);
  void commit();
  CompareOutcome evaluate();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Both phases at once.
CompareOutcome compare_runs(const CompareOptions& options);

// Perplexity against length, one series per run with its interval band, the training
// lengths marked.
PlotSpec comparison_plot(const Comparison& c);

}  // namespace txl
