// Running a study's cells (study.cpp decides which and writes the report afterwards).
#pragma once

#include <atomic>
#include <vector>

#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"
#include "txl/study/study_options.h"

namespace txl {

// Runs the cells one after another in this process; the exit code.
int run_in_process(const StudySpec& spec, const StudyPaths& paths,
                   const std::vector<const StudyCell*>& cells, const std::atomic<int>* stop);

// Runs the cells as `txl study --cell NAME` children, `jobs` at a time, each with its share
// of the cores; output goes to DIR/logs/<cell>.log. The exit code.
int run_children(const StudySpec& spec, const StudyPaths& paths, const StudyOptions& o,
                 const std::vector<const StudyCell*>& cells);

}  // namespace txl
