// `txl study`: every cell of a study trained and evaluated, then the statistics and the
// report (study_cell.h for the directory layout). Re-running the same command continues:
// finished cells are reused, a partly trained cell resumes from its checkpoint, evaluations
// come from each run's cache. A study config that changed in anything but added grid values
// is refused, naming the difference.
#pragma once

#include <string>

#include "txl/study/study_options.h"

namespace txl {

// The default output folder for a study config.
std::string default_study_dir(const std::string& config_path);

// Runs the study as asked; returns the exit code (0, or 128 + signal when interrupted).
// Bad input throws InputError before anything is written.
int run_study(const StudyOptions& options);

}  // namespace txl
