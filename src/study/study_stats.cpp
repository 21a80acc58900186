#include "txl/study/study_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "txl/eval/interval.h"
#include "txl/study/statistics.h"

namespace txl {

namespace {

// exp() of a t interval over per-seed values: an estimate on the perplexity scale.
Estimate exp_estimate(const SeedInterval& s) {
  Estimate e;
  e.value = std::exp(s.mean);
  if (s.valid) {
    e.has_interval = true;
    e.lo = std::exp(s.lo);
    e.hi = std::exp(s.hi);
    e.basis = "seeds";
  }
  return e;
}

Estimate nats_estimate(const SeedInterval& s) {
  Estimate e;
  e.value = s.mean;
  if (s.valid) {
    e.has_interval = true;
    e.lo = s.lo;
    e.hi = s.hi;
    e.basis = "seeds";
  }
  return e;
}

// The cells of one group by seed.
using SeedCells = std::map<int64_t, const CellResults*>;

const EvalResult* result_at(const CellResults* c, size_t protocol, size_t length) {
  if (!c || protocol >= c->results.size() || length >= c->results[protocol].size()) return nullptr;
  const auto& r = c->results[protocol][length];
  return r ? &*r : nullptr;
}

std::string reason_at(const SeedCells& cells, size_t protocol, size_t length) {
  for (const auto& [seed, c] : cells) {
    if (protocol < c->skipped.size() && length < c->skipped[protocol].size() &&
        !c->skipped[protocol][length].empty())
      return c->skipped[protocol][length];
  }
  return "no finished cell";
}

LengthStats length_stats(const SeedCells& cells, size_t p, size_t li, int64_t length) {
  LengthStats s;
  s.length = length;
  std::vector<double> means;
  std::vector<const EvalResult*> results;
  for (const auto& [seed, c] : cells) {
    if (const EvalResult* r = result_at(c, p, li)) {
      means.push_back(r->mean_nll());
      results.push_back(r);
    }
  }
  if (means.empty()) {
    s.unavailable = reason_at(cells, p, li);
    return s;
  }
  s.seeds = static_cast<int64_t>(means.size());
  const SeedInterval si = seed_interval(means);
  s.mean_nll = si.mean;
  s.ppl = exp_estimate(si);
  if (means.size() == 1) {
    const Interval w = mean_nll_interval(*results[0]);
    if (w.valid) {
      s.ppl.has_interval = true;
      s.ppl.lo = std::exp(w.lo);
      s.ppl.hi = std::exp(w.hi);
      s.ppl.basis = "windows";
    }
  }
  // Per position, averaged over seeds (every seed has the same buckets).
  s.position_start = results[0]->position_start;
  s.position_nll.assign(results[0]->position_nll.size(), 0.0);
  for (const EvalResult* r : results) {
    for (size_t b = 0; b < s.position_nll.size() && b < r->position_nll.size(); ++b)
      s.position_nll[b] += r->position_nll[b] / static_cast<double>(results.size());
  }
  return s;
}

void add_vs_baseline(LengthStats& s, const SeedCells& group, const SeedCells& base, size_t p,
                     size_t li) {
  std::vector<double> diffs;
  const EvalResult* last_a = nullptr;
  const EvalResult* last_b = nullptr;
  for (const auto& [seed, c] : group) {
    const auto it = base.find(seed);
    if (it == base.end()) continue;
    const EvalResult* a = result_at(c, p, li);
    const EvalResult* b = result_at(it->second, p, li);
    if (!a || !b) continue;
    diffs.push_back(a->mean_nll() - b->mean_nll());
    last_a = a;
    last_b = b;
  }
  if (diffs.empty()) return;
  s.has_vs_baseline = true;
  s.pairs = static_cast<int64_t>(diffs.size());
  const SeedInterval d = seed_interval(diffs);
  s.nll_diff = nats_estimate(d);
  s.ppl_ratio = exp_estimate(d);
  s.significant = d.excludes_zero();
  if (diffs.size() == 1) {
    try {
      const PairedDifference w = paired_difference(*last_a, *last_b);
      if (w.diff.valid) {
        s.nll_diff = {w.mean_diff, true, w.diff.lo, w.diff.hi, "windows"};
        s.ppl_ratio = {std::exp(w.mean_diff), true, std::exp(w.diff.lo), std::exp(w.diff.hi),
                       "windows"};
      }
    } catch (const std::invalid_argument&) {
      // different windows (cannot happen within one study): keep the point estimate
    }
  }
}

void add_vs_train(LengthStats& s, const SeedCells& group, size_t p, size_t li, size_t ti) {
  std::vector<double> diffs;
  for (const auto& [seed, c] : group) {
    const EvalResult* at_l = result_at(c, p, li);
    const EvalResult* at_t = result_at(c, p, ti);
    if (at_l && at_t) diffs.push_back(at_l->mean_nll() - at_t->mean_nll());
  }
  if (diffs.empty()) return;
  s.has_vs_train = true;
  s.train_ratio = exp_estimate(seed_interval(diffs));
}

}  // namespace

StudyStats compute_study_stats(const StudySpec& spec, const std::vector<CellResults>& cells,
                               const std::string& baseline) {
  StudyStats out;
  out.baseline = baseline.empty() ? spec.baseline : baseline;
  std::map<std::string, SeedCells> by_group;
  for (const auto& c : cells) by_group[c.group][c.seed] = &c;
  for (const auto& cell : spec.cells) {
    const auto it = by_group.find(cell.group);
    if (it == by_group.end() || !it->second.count(cell.seed))
      out.missing_cells.push_back(cell.name);
  }
  const auto& lengths = spec.eval.lengths;
  for (const auto& name : spec.groups) {
    const SeedCells& group = by_group[name];
    GroupStats g;
    g.name = name;
    const StudyCell* first = nullptr;
    for (const auto& cell : spec.cells) {
      if (cell.group == name) {
        first = first ? first : &cell;
        if (group.count(cell.seed)) g.seeds.push_back(cell.seed);
      }
    }
    g.encoding = first->encoding;
    g.baseline_group = baseline_group(spec, name, out.baseline);
    const SeedCells& base = by_group[g.baseline_group];
    g.train_length = first->config.train.tgt_len;
    g.tokenizer = to_string(first->config.data.tokenizer);
    for (const auto& [seed, c] : group) g.bytes_per_token = c->bytes_per_token;
    const auto t_it = std::find(lengths.begin(), lengths.end(), g.train_length);
    for (size_t p = 0; p < spec.protocols.size(); ++p) {
      std::vector<LengthStats> rows;
      for (size_t li = 0; li < lengths.size(); ++li) {
        LengthStats s = length_stats(group, p, li, lengths[li]);
        if (s.unavailable.empty()) {
          if (g.encoding != out.baseline) add_vs_baseline(s, group, base, p, li);
          if (t_it != lengths.end())
            add_vs_train(s, group, p, li, static_cast<size_t>(t_it - lengths.begin()));
        }
        rows.push_back(std::move(s));
      }
      g.rows.push_back(std::move(rows));
    }
    out.groups.push_back(std::move(g));
  }
  return out;
}

}  // namespace txl
