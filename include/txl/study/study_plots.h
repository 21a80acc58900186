// The plots a study draws, as data for eval/plot.h's write_plot (report.md embeds them), and
// what the report reads from each cell's metrics.jsonl.
#pragma once

#include <string>
#include <vector>

#include "txl/eval/plot.h"
#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"
#include "txl/study/study_stats.h"

namespace txl {

// The corpus folder's last component, for titles.
std::string study_corpus_name(const StudySpec& spec);

// Perplexity against length, one series per group, for protocol p.
PlotSpec ppl_plot_spec(const StudySpec& spec, const StudyStats& stats, size_t p);
// Mean NLL by position inside the window at the longest length, for protocol p.
PlotSpec position_plot_spec(const StudySpec& spec, const StudyStats& stats, size_t p);
// One line per cell from its metrics.jsonl: validation perplexity or training loss by step.
PlotSpec training_plot_spec(const StudySpec& spec, const StudyPaths& paths,
                            const std::vector<CellResults>& cells, bool validation);

// The last validation perplexity in the cell's metrics (0 when none).
double last_valid_ppl(const StudyPaths& paths, const std::string& cell);

}  // namespace txl
