// Plots of runs' metrics.jsonl over training (run_metrics.h), as PlotSpecs for write_plot:
// `txl plot` draws them, a study's report draws the training ones per cell.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/eval/plot.h"
#include "txl/eval/run_metrics.h"

namespace txl {

// What the x axis counts.
enum class MetricsAxis { kStep, kTokens };

struct LabelledMetrics {
  std::string label;  // the run's name in the legend
  RunMetrics metrics;
};

// One picture: `name` says which ("loss", "valid", a probe series made file-name safe).
struct MetricsPlot {
  std::string name;
  PlotSpec spec;
};

// The runs' names for a legend: each folder's last component, with as many components above
// it as make the names differ ("a/run" and "b/run").
std::vector<std::string> run_labels(const std::vector<std::string>& dirs);

// One run's training loss (NaN intervals left out) or validation perplexity by step or by
// tokens seen (a validation's tokens from the progress lines around it: tokens_at).
// InputError naming the file when the axis is tokens and the run logs no tokens_seen.
PlotSeries loss_series(const LabelledMetrics& run, MetricsAxis axis);
PlotSeries validation_series(const LabelledMetrics& run, MetricsAxis axis);

// Training loss ("loss") and validation perplexity ("valid", left out when no run has a
// validation), one line per run. InputError when no run has a progress line.
std::vector<MetricsPlot> training_plots(const std::vector<LabelledMetrics>& runs, MetricsAxis axis);

// One plot per probe series family, value by step, one line per (run, x). InputError naming
// the files when no run has a probe line, saying how to get them (train.probes).
std::vector<MetricsPlot> probe_plots(const std::vector<LabelledMetrics>& runs, MetricsAxis axis);

// {"x_axis", "plots": [{"name", "file", "title", "xlabel", "ylabel", "series": [{"label",
// "x": [...], "y": [...]}]}]}: what was drawn, with the files it went to (`files[i]` for
// plots[i]).
nlohmann::json metrics_plots_json(const std::vector<MetricsPlot>& plots,
                                  const std::vector<std::string>& files, MetricsAxis axis);

}  // namespace txl
