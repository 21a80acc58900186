// The probes of a study: every probe metric of every cell, gathered per group (the cells
// that differ only in train.seed) as the mean over seeds with the Student t interval over
// seeds (statistics.h), the same seed-level statistics as perplexity. A group probe (RECL)
// is computed per seed over the study's groups at that seed (and the same other grid
// values) as its model group, then gathered over seeds like the others.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "txl/eval/plot.h"
#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"

namespace txl {

struct ProbeGroupEstimate {
  int64_t seeds = 0;  // cells that gave a value (0: none)
  double mean = 0.0;
  bool has_interval = false;  // >= 2 seeds
  double lo = 0.0, hi = 0.0;
};

struct ProbeMetricRow {
  std::string series;
  std::string x_name;
  double x = 0.0;
  std::string grid, y_name;  // as ProbeMetric
  double grid_y = 0.0;
  bool in_table = true;
  std::vector<ProbeGroupEstimate> groups;  // in StudyProbes::groups order
};

struct StudyProbeSection {
  std::string probe;
  std::string description;
  nlohmann::json options;  // the first cell's options (seed included)
  std::vector<ProbeMetricRow> rows;
};

struct StudyProbes {
  std::vector<std::string> groups;
  std::vector<int64_t> train_lengths;       // of the cells (train.tgt_len), marked on the plots
  std::vector<StudyProbeSection> sections;  // in the order the study lists its probes
};

StudyProbes study_probe_stats(const StudySpec& spec, const std::vector<CellResults>& cells);
nlohmann::json to_json(const StudyProbes& probes);

// The report's section: one table per probe (rows: metric and x; columns: groups), each
// followed by its images. `image(alt, plot)` links a drawn plot.
std::string probes_markdown(
    const StudyProbes& probes,
    const std::function<std::string(const std::string&, const std::string&)>& image);

// The plots the section links: one line plot per (probe, series family) with one line per
// group, and one heatmap per (grid, group). Names are relative to the study directory
// ("plots/probe-copy-gain").
std::vector<std::pair<std::string, PlotSpec>> probe_line_plots(const StudyProbes& probes);
std::vector<std::pair<std::string, HeatmapSpec>> probe_heatmaps(const StudyProbes& probes);

}  // namespace txl
