// `txl study`: every cell of a study trained and evaluated, then the statistics and the
// report (study_cell.h for the directory layout). Re-running the same command continues:
// finished cells are reused, a partly trained cell resumes from its checkpoint, evaluations
// come from each run's cache. A study config that changed in anything but added grid values
// is refused, naming the difference.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace txl {

struct StudyOptions {
  std::string config_path;
  std::string out_dir;             // "" = runs/study-<config stem>
  std::vector<std::string> cells;  // --cell: run only these (no report)
  bool list = false;               // print one command per cell, run nothing
  bool report_only = false;        // aggregate the finished cells, train nothing
  int64_t jobs = 1;                // cells at once (child processes)
  int64_t threads = 0;             // per cell; 0 = all cores (divided among --jobs)
  std::string baseline;            // an encoding; "" = the config's, else the grid's first
  const std::atomic<int>* stop = nullptr;
  std::string executable;  // this txl, for --jobs children and --list
};

// Set in the environment of --jobs children to the study's pid.
inline constexpr const char* kStudyParentEnv = "TXL_STUDY_PARENT";

// The default output folder for a study config.
std::string default_study_dir(const std::string& config_path);

// Runs the study as asked; returns the exit code (0, or 128 + signal when interrupted).
// Bad input throws InputError before anything is written.
int run_study(const StudyOptions& options);

}  // namespace txl
