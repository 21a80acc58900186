// What `txl study` is asked to do (its options), apart from study.h so that the cell runner
// (study_runner.h), which study.cpp calls, does not include study.h back.
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

}  // namespace txl
