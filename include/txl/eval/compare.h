// Side-by-side comparison of several runs evaluated on the same split, windows and tokens:
// one row per evaluated length, one column per run, and for exactly two runs the paired
// difference of mean NLL per token over the same windows with its 95% interval.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/eval/evaluate.h"
#include "txl/eval/interval.h"
#include "txl/eval/report.h"

namespace txl {

struct CompareRun {
  std::string dir;
  std::string name;  // the directory's last component
  RunIdentity identity;
  // False when no length of this run is evaluated (the method needs memory an absolute
  // encoding lacks, every length is past a learned table): the run's cells read "n/a" and
  // `results` is empty; `unsupported` gives the lengths' reasons.
  bool supported = true;
  std::string unsupported;
  std::vector<EvalResult> results;  // one per length, same order as Comparison::lengths
  std::vector<bool> cached;         // per result: reused from RUN/eval-cache
  // Per length: why it was not evaluated ("" = evaluated; e.g. past a learned table). A
  // skipped length's result is empty and its cell reads "n/a".
  std::vector<std::string> skipped;
  bool evaluated(size_t i) const {
    return supported && (i >= skipped.size() || skipped[i].empty());
  }
};

struct Comparison {
  std::string corpus;  // data.dir's last component
  std::string data_dir;
  std::string split;
  std::string tokenizer;           // char | byte | word | bpe | unigram
  double bytes_per_token = 0;      // of the split (report.h: EvalReport::bytes_per_token)
  std::string method;              // nonoverlap | sliding | memory
  std::string precision = "fp32";  // fp32 | bf16 (--precision)
  std::vector<int64_t> lengths;
  std::vector<CompareRun> runs;
  BootstrapOptions bootstrap;
  bool per_position = false;
};

// The paired difference run a - run b at length index i; only for two supported runs.
bool has_paired(const Comparison& c);
PairedDifference paired_at(const Comparison& c, size_t length_index);

// {"corpus", "data_dir", "split", "tokenizer", "method", "lengths", "interval",
//  "runs": [{"name", "dir", "encoding", "train_length", "checkpoint", "checkpoint_step",
//            "supported", "results": [summary + "cached" + "per_position"?]}],
//  "paired"?: {"a", "b", "rows": [{"length", "tokens", "windows", "mean_nll_diff",
//              "diff_lo", "diff_hi", "ppl_ratio", "ratio_lo", "ratio_hi"}]}}
nlohmann::json comparison_to_json(const Comparison& c);

std::string format_comparison_table(const Comparison& c);

}  // namespace txl
