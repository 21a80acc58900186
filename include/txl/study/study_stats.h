// The statistics of a study, from its finished cells: per group (the cells that differ only
// in train.seed), protocol and length, perplexity with an interval across seeds, the paired
// difference against the baseline group and the ratio to perplexity at the training length.
//
// Method (also stated in results.json and report.md):
//  - Each seed s gives m_s, its mean NLL per token over the evaluated tokens (every cell of
//    a study scores the same windows). The group's perplexity is exp(mean over seeds of m_s)
//    and its 95% interval is exp() of the Student t interval of the m_s (statistics.h).
//    With a single seed there is no spread across seeds to estimate; the interval is then
//    the window bootstrap of `txl compare` and is labelled "windows".
//  - Against the baseline (the baseline encoding's group at the same other grid values),
//    d_s = m_s(group) - m_s(baseline) for every seed both have (the same seed value; the
//    same windows, so the pairing is by seed and by window). The ratio
//    of perplexities is exp(mean d_s) with exp() of the t interval of the d_s. A difference is
//    significant only when that seed-level interval excludes 0; with one common seed the
//    window-bootstrap interval is shown but never called significant.
//  - The extrapolation ratio at length L is exp(mean over seeds of m_s(L) - m_s(T)), T the
//    training length train.tgt_len (when it is one of the evaluated lengths), with the t
//    interval of the per-seed differences.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"

namespace txl {

// A point with a 95% interval; `basis` names where the interval comes from: "seeds" (t over
// per-seed values), "windows" (bootstrap over windows, one seed) or "" (no interval).
struct Estimate {
  double value = 0.0;
  bool has_interval = false;
  double lo = 0.0;
  double hi = 0.0;
  std::string basis;
};

struct LengthStats {
  int64_t length = 0;
  std::string unavailable;  // why there is no number ("" when there is)
  int64_t seeds = 0;        // seeds that contributed
  double mean_nll = 0.0;
  Estimate ppl;
  // Against the baseline group (not for the baseline itself).
  bool has_vs_baseline = false;
  int64_t pairs = 0;
  Estimate nll_diff;   // mean d_s in nats
  Estimate ppl_ratio;  // exp of nll_diff
  bool significant = false;
  // Against the training length of this group.
  bool has_vs_train = false;
  Estimate train_ratio;  // ppl(L) / ppl(T)
  // Mean NLL per position bucket, averaged over seeds.
  std::vector<int64_t> position_start;
  std::vector<double> position_nll;
};

struct GroupStats {
  std::string name;
  std::string encoding;        // its model.pos_encoding
  std::string baseline_group;  // what it is compared with (itself for the baseline's groups)
  int64_t train_length = 0;
  std::string tokenizer;                       // data.tokenizer of its cells
  double bytes_per_token = 0.0;                // of the split under that tokenizer (0 = unknown)
  std::vector<int64_t> seeds;                  // seeds with a finished cell
  std::vector<std::vector<LengthStats>> rows;  // [protocol][length]
};

struct StudyStats {
  std::string baseline;  // the baseline encoding
  std::vector<GroupStats> groups;
  std::vector<std::string> missing_cells;  // cells without results yet
};

inline constexpr const char* kStatisticsMethod =
    "Per seed s: m_s = mean NLL per token on the same windows. Perplexity = exp(mean_s m_s); "
    "95% interval = exp(mean +- t(0.975, n-1) * sd / sqrt(n)) over the n seeds (Student t). "
    "With one seed the interval is the percentile bootstrap over windows (labelled windows). "
    "Versus the baseline: d_s = m_s(encoding) - m_s(baseline) for each common seed (paired by "
    "seed and window); ratio = exp(mean d_s) with the t interval of the d_s; significant only "
    "when that seed-level interval excludes 0. Extrapolation ratio: exp(mean_s (m_s(L) - "
    "m_s(T))), T = train.tgt_len, with the t interval of the per-seed differences.";

StudyStats compute_study_stats(const StudySpec& spec, const std::vector<CellResults>& cells,
                               const std::string& baseline);

}  // namespace txl
