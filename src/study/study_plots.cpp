#include "txl/study/study_plots.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "txl/eval/metrics_plots.h"
#include "txl/eval/run_metrics.h"
#include "txl/run/run_dir.h"

namespace txl {

namespace {

// What the cell logged, as far as it can be read (a line cut by kill -9 is passed over), a
// resumed cell read as one run (eval/run_metrics.h).
LabelledMetrics cell_metrics(const StudyPaths& paths, const std::string& cell) {
  return {cell,
          read_run_metrics(RunPaths{paths.run_dir(cell)}.metrics(), MetricsReading::kLenient)};
}

}  // namespace

std::string study_corpus_name(const StudySpec& spec) {
  return run_name(spec.cells.front().config.data.dir);
}

// The last validation perplexity in the cell's metrics (0 when none).
double last_valid_ppl(const StudyPaths& paths, const std::string& cell) {
  const RunMetrics metrics = cell_metrics(paths, cell).metrics;
  return metrics.validations.empty() ? 0.0 : metrics.validations.back().ppl;
}

PlotSpec ppl_plot_spec(const StudySpec& spec, const StudyStats& stats, size_t p) {
  PlotSpec s;
  s.title = fmt::format("{}: perplexity vs evaluated length ({}, {} split)",
                        study_corpus_name(spec), spec.protocols[p].label, spec.eval.split);
  s.xlabel = "evaluated length L (tokens, log2 scale)";
  s.ylabel = "perplexity";
  s.mark_label = "trained at {}";
  s.bands = true;
  const bool one_seed = std::any_of(stats.groups.begin(), stats.groups.end(),
                                    [](const GroupStats& g) { return g.seeds.size() < 2; });
  s.key_title =
      one_seed ? "bands: 95% interval (seeds; 1 seed: windows)" : "bands: 95% interval over seeds";
  for (const auto& g : stats.groups) {
    PlotSeries series;
    series.label =
        fmt::format("{} ({} seed{})", g.name, g.seeds.size(), g.seeds.size() == 1 ? "" : "s");
    for (const auto& row : g.rows[p]) {
      if (!row.unavailable.empty()) continue;
      series.x.push_back(row.length);
      series.y.push_back(row.ppl.value);
      series.lo.push_back(row.ppl.has_interval ? row.ppl.lo : row.ppl.value);
      series.hi.push_back(row.ppl.has_interval ? row.ppl.hi : row.ppl.value);
    }
    if (series.x.empty()) continue;
    s.series.push_back(series);
    if (std::find(s.marks.begin(), s.marks.end(), g.train_length) == s.marks.end())
      s.marks.push_back(g.train_length);
  }
  return s;
}

// Mean NLL per window position at the longest length every group reached.
PlotSpec position_plot_spec(const StudySpec& spec, const StudyStats& stats, size_t p) {
  PlotSpec s;
  const int64_t length = spec.eval.lengths.back();
  s.title = fmt::format("{}: loss by position in the window at L = {} ({})",
                        study_corpus_name(spec), length, spec.protocols[p].label);
  s.xlabel = "position in the window (first position of each bucket)";
  s.ylabel = "mean NLL (nats per token, mean over seeds)";
  s.mark_label = "trained at {}";
  s.log_x = false;
  s.x_max = length;
  s.key_title = "";
  for (const auto& g : stats.groups) {
    const auto& row = g.rows[p].back();
    if (!row.unavailable.empty() || row.position_nll.empty()) continue;
    PlotSeries series;
    series.label = g.name;
    for (size_t b = 0; b < row.position_nll.size(); ++b) {
      series.x.push_back(row.position_start[b]);
      series.y.push_back(row.position_nll[b]);
    }
    s.series.push_back(series);
    if (g.train_length < length &&
        std::find(s.marks.begin(), s.marks.end(), g.train_length) == s.marks.end())
      s.marks.push_back(g.train_length);
  }
  return s;
}

// One line per cell from its metrics.jsonl: validation perplexity or training loss by step.
PlotSpec training_plot_spec(const StudySpec& spec, const StudyPaths& paths,
                            const std::vector<CellResults>& cells, bool validation) {
  PlotSpec s;
  s.title = fmt::format("{}: {} during training, per cell", study_corpus_name(spec),
                        validation ? "validation perplexity" : "training loss");
  s.xlabel = "optimizer step";
  s.ylabel =
      validation ? "validation perplexity" : "training loss (nats per token, log interval mean)";
  s.log_x = false;
  s.key_title = "";
  s.points = validation;
  for (const auto& c : cells) {
    const LabelledMetrics run = cell_metrics(paths, c.name);
    PlotSeries series = validation ? validation_series(run, MetricsAxis::kStep)
                                   : loss_series(run, MetricsAxis::kStep);
    if (!series.x.empty()) s.series.push_back(series);
  }
  return s;
}

}  // namespace txl
