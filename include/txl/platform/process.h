// Running this program again as a child process: `txl bench` measures each long-window
// evaluation in a fresh process so that one run's peak memory cannot mask another's.
#pragma once

#include <string>
#include <vector>

namespace txl {

// Path of the running executable (/proc/self/exe resolved).
std::string self_executable();

// Runs argv[0] with arguments argv[1..] (no shell), waits, and returns its exit code
// (128 + signal when it was killed). Throws std::runtime_error when it cannot start.
int run_process(const std::vector<std::string>& argv);

// This process's environment ("NAME=value" entries) with `assignments` set: each replaces
// an inherited entry of the same name. For the environment of a child process.
std::vector<std::string> environment_with(const std::vector<std::string>& assignments);

// The 1-minute load average (/proc/loadavg), to print next to timings on a shared machine.
double load_average();

}  // namespace txl
