// What a study writes from its finished cells: DIR/results.json (every cell, every number,
// the study config, txl version, statistics method), DIR/report.md (readable as is on a code
// host) and the plots it embeds, DIR/plots/*.png and .svg.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"
#include "txl/study/study_stats.h"

namespace txl {

struct StudyReportInfo {
  std::string config_path;  // the study config as given on the command line
  std::string out_dir;      // as given (--out)
  std::string machine;      // CPU model and flags summary
  double wall_seconds = 0;  // of the invocation that wrote the report (0: --report)
};

nlohmann::json study_results_json(const StudySpec& spec, const std::vector<CellResults>& cells,
                                  const StudyStats& stats, const StudyReportInfo& info);

// report.md; `drawn` names the plots (relative to DIR, without extension) that exist, the
// only ones it links; `plot_notes` say why the others are missing.
std::string study_report_markdown(const StudySpec& spec, const std::vector<CellResults>& cells,
                                  const StudyStats& stats, const StudyReportInfo& info,
                                  const std::vector<std::string>& drawn,
                                  const std::vector<std::string>& plot_notes);

// Writes results.json, the plots (a missing gnuplot is noted in the report, not fatal) and
// report.md; returns the paths written.
std::vector<std::string> write_study_report(const StudySpec& spec, const StudyPaths& paths,
                                            const std::vector<CellResults>& cells,
                                            const StudyStats& stats, const StudyReportInfo& info);

}  // namespace txl
