// The `txl eval` workflow as a library call: load a run, check every requested length
// (the request itself, then that it fits in memory) before the first is evaluated, and
// evaluate each through the run's cache into an EvalReport (report.h) that the command
// prints and writes as JSON. A refusal is an InputError and writes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/data/token_cache.h"
#include "txl/data/tokenizer.h"
#include "txl/eval/per_token.h"
#include "txl/eval/report.h"
#include "txl/eval/request.h"
#include "txl/eval/text_documents.h"
#include "txl/run/run_dir.h"

namespace txl {

// A loaded run as a higher layer (the probes, probe/assessment.h) sees it: the model, the
// split, the lengths.
struct LoadedEval {
  LoadedRun& run;
  const std::vector<int32_t>& ids;      // the split, or the --text files joined in order
  const std::vector<int64_t>& lengths;  // resolved (the run's eval.lengths by default)
};

struct RunEvalOptions : EvalPlan {
  std::string run_dir;
};

struct RunEvalOutcome {
  EvalReport report;
  EncodeStats stats;  // tokens of the split (or of every --text file) scored as <unk>
};

// The evaluation of one run in its two phases, so that a caller can add checks of its own
// between them (the probes' plan): constructing it loads the run and the split and decides
// every length (request_unavailable: evaluated, n/a with the reason, or refused; nothing
// evaluated at all is refused too), then checks that those evaluated fit in memory (none of
// this with check_lengths false: the probes alone, txl eval --shard). The token cache's new
// entries are held until commit(), so a refusal by a later check writes nothing. evaluate()
// then scores every length through the run's cache (n/a ones are empty results beside their
// reason in EvalReport::skipped), printing one line per length on stderr.
class PreparedEval {
 public:
  explicit PreparedEval(const RunEvalOptions& options, bool check_lengths = true);
  PreparedEval(const PreparedEval&) = delete;
  PreparedEval& operator=(const PreparedEval&) = delete;

  // The split, or the --text files joined in order (what the probes read).
  LoadedEval loaded();
  void commit() { cache_writes_.commit(); }
  RunEvalOutcome evaluate();

 private:
  EvalRequest request(int64_t length) const;
  void decide_lengths();

  // The texts scored: the split, or each --text file (text_documents.h).
  void load_documents();
  EvalResult evaluate_documents(int64_t length, bool* cached, EvalReport& report);

  RunEvalOptions options_;
  LoadedRun run_;
  std::string split_;
  std::vector<TextDocument> documents_;
  std::vector<int32_t> joined_;            // several --text files joined, once the probes ask
  std::vector<PerTokenScores> per_token_;  // with --per-token: each length's, each document's
  std::vector<int64_t> lengths_;
  std::vector<std::string> skipped_;  // per length: why it is n/a ("" = evaluated)
  EncodeStats stats_;
  TokenCacheWrites cache_writes_;
};

// Both phases at once.
RunEvalOutcome evaluate_run(const RunEvalOptions& options);

}  // namespace txl
