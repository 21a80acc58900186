// Running a study's cells: one after another in this process, or as --jobs child processes
// (`txl study --cell NAME`, each in its own process group, output to DIR/logs/<cell>.log),
// with progress lines on stderr.
#include "txl/study/study_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/fmt/fmt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include "txl/platform/process.h"
#include "txl/study/study_cell.h"
#include "txl/study/study_options.h"
#include "txl/util/clock.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

// Progress across the study: states, counts and the time left from measured cells.
class StudyProgress {
 public:
  StudyProgress(size_t total, int64_t jobs) : total_(total), jobs_(std::max<int64_t>(1, jobs)) {}
  void finished(double seconds, bool worked) {
    ++done_;
    if (worked) {
      measured_ += seconds;
      ++measured_cells_;
    }
  }
  std::string line(const std::string& what) const {
    const size_t left = total_ - done_;
    std::string eta = "time left: unknown until a cell finishes";
    if (measured_cells_ > 0) {
      const double per_cell = measured_ / static_cast<double>(measured_cells_);
      eta = "time left ~" +
            format_duration(per_cell * static_cast<double>(left) / static_cast<double>(jobs_));
    }
    return fmt::format("[study] {} | {} of {} cells done | elapsed {} | {}", what, done_, total_,
                       format_duration(seconds_since(start_)), eta);
  }

 private:
  size_t total_;
  int64_t jobs_;
  size_t done_ = 0;
  double measured_ = 0.0;
  size_t measured_cells_ = 0;
  Clock::time_point start_ = Clock::now();
};

// The last training progress line ("step ...") a child wrote to its log, or "".
std::string last_progress_line(const std::string& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.rfind("step ", 0) == 0 || line.rfind("valid @", 0) == 0) last = line;
  }
  return last;
}

pid_t spawn_cell(const std::string& exe, const std::vector<std::string>& args,
                 const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> strings = {exe};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  // In a process group of its own: a Ctrl-C at the terminal reaches only the study, which
  // passes one SIGINT on to each cell (two would make a cell quit without its checkpoint).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> env_strings =
      environment_with({std::string(kStudyParentEnv) + "=" + std::to_string(::getpid())});
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + exe + " for a study cell");
  return pid;
}

using RunningCells = std::map<pid_t, std::pair<const StudyCell*, Clock::time_point>>;

// Leaving by an exception stops the running cells (cleanly) and waits for them, so none
// trains on holding its run's lock where the next study would find it.
struct StopChildrenOnThrow {
  RunningCells& running;
  int uncaught = std::uncaught_exceptions();
  ~StopChildrenOnThrow() {
    if (std::uncaught_exceptions() == uncaught) return;
    for (const auto& entry : running) ::kill(entry.first, SIGINT);
    for (const auto& entry : running) ::waitpid(entry.first, nullptr, 0);
  }
};

// What run_children starts: its cells, and how each child is invoked.
struct ChildLaunch {
  const StudySpec& spec;
  const StudyPaths& paths;
  const StudyOptions& o;
  const std::vector<const StudyCell*>& cells;
  int64_t threads;  // per child
};

// Where run_children stands: cells from `next` on are not started yet.
struct ChildrenState {
  size_t next = 0;
  RunningCells running;
  int failure = 0;         // the exit code of a failed cell; no new cell starts after one
  int signal = 0;          // the signal that stopped the study or a cell; no new cell starts either
  bool forwarded = false;  // the study's own stop passed on to the running cells
  std::vector<std::string> failed;
};

// Each child's threads: --threads, or the cores shared among the --jobs.
int64_t child_threads(const StudyOptions& o) {
  const int64_t cores = std::max<unsigned>(1, std::thread::hardware_concurrency());
  return o.threads > 0 ? o.threads : std::max<int64_t>(1, cores / o.jobs);
}

void forward_stop(const std::atomic<int>* stop, ChildrenState& state) {
  if (stop && stop->load() != 0 && !state.forwarded) {
    state.forwarded = true;
    if (state.signal == 0) state.signal = stop->load();
    for (const auto& [pid, cell] : state.running) ::kill(pid, SIGINT);
  }
}

// Starts cells until --jobs of them run (cells already done are counted, not run), unless
// the study is stopping or a cell failed.
void start_cells(const ChildLaunch& launch, StudyProgress& progress, ChildrenState& state) {
  const StudyPaths& paths = launch.paths;
  const bool stopping = state.signal != 0;
  while (!stopping && state.failure == 0 && state.next < launch.cells.size() &&
         static_cast<int64_t>(state.running.size()) < launch.o.jobs) {
    const StudyCell* cell = launch.cells[state.next++];
    if (cell_state(launch.spec, *cell, paths) == CellState::kDone) {
      progress.finished(0, false);
      fmt::print(stderr, "{}\n", progress.line(cell->name + ": done (reused)"));
      continue;
    }
    std::vector<std::string> args = {"study",    "--config",  launch.o.config_path,
                                     "--out",    paths.dir,   "--cell",
                                     cell->name, "--threads", std::to_string(launch.threads)};
    const pid_t pid = spawn_cell(launch.o.executable, args, paths.log(cell->name));
    state.running[pid] = {cell, Clock::now()};
    fmt::print(stderr, "{}\n",
               progress.line(fmt::format("{}: running ({} threads, log {})", cell->name,
                                         launch.threads, paths.log(cell->name))));
  }
}

// Each running cell's latest training line, then the study's progress.
void report_running(const StudyPaths& paths, const RunningCells& running,
                    const StudyProgress& progress) {
  for (const auto& [child, entry] : running) {
    const std::string line = last_progress_line(paths.log(entry.first->name));
    if (!line.empty()) fmt::print(stderr, "[study]   {}: {}\n", entry.first->name, line);
  }
  fmt::print(stderr, "{}\n", progress.line(fmt::format("{} running", running.size())));
}

// A child that exited with `status` after running `cell` since `start`: done, stopped by a
// signal (the study's or its own), or failed.
void record_exit(const StudyCell& cell, Clock::time_point start, int status,
                 const StudyPaths& paths, StudyProgress& progress, ChildrenState& state) {
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == 0) {
    progress.finished(seconds_since(start), true);
    fmt::print(stderr, "{}\n", progress.line(cell.name + ": done"));
  } else if (state.signal != 0 || code == 130 || code == 143) {
    fmt::print(stderr, "[study] {} stopped (exit {}); its checkpoint is saved\n", cell.name, code);
    if (state.signal == 0) state.signal = code - 128;
  } else {
    state.failure = code;
    state.failed.push_back(cell.name);
    fmt::print(stderr, "[study] {} failed (exit {}); see {}\n", cell.name, code,
               paths.log(cell.name));
  }
}

// The exit code once no child runs: 128 + signal when stopped; throws when a cell failed.
int children_exit_code(const ChildrenState& state, const StudyPaths& paths) {
  if (state.signal != 0) {
    fmt::print(stderr, "[study] interrupted; run the same command again to continue the study\n");
    return 128 + state.signal;
  }
  if (state.failure != 0) {
    throw std::runtime_error("study cells failed: " + join(state.failed) + " (logs in " +
                             paths.dir + "/logs/)");
  }
  return 0;
}

}  // namespace

int run_in_process(const StudySpec& spec, const StudyPaths& paths,
                   const std::vector<const StudyCell*>& cells, const std::atomic<int>* stop) {
  StudyProgress progress(cells.size(), 1);
  for (size_t i = 0; i < cells.size(); ++i) {
    const StudyCell& cell = *cells[i];
    const CellState state = cell_state(spec, cell, paths);
    if (state == CellState::kDone) {
      progress.finished(0, false);
      fmt::print(stderr, "{}\n", progress.line(fmt::format("{}: done (reused)", cell.name)));
      continue;
    }
    fmt::print(stderr, "{}\n",
               progress.line(fmt::format("cell {}/{} {}: {} -> running", i + 1, cells.size(),
                                         cell.name, to_string(state))));
    const auto start = Clock::now();
    const CellOutcome outcome = run_cell(spec, cell, paths, stop);
    if (outcome.interrupted) {
      fmt::print(stderr,
                 "[study] interrupted in {} by signal {}; its checkpoint is saved. Run the same "
                 "command again to continue the study\n",
                 cell.name, outcome.signal);
      return 128 + outcome.signal;
    }
    progress.finished(seconds_since(start), true);
    fmt::print(stderr, "{}\n", progress.line(fmt::format("{}: done", cell.name)));
  }
  return 0;
}

int run_children(const StudySpec& spec, const StudyPaths& paths, const StudyOptions& o,
                 const std::vector<const StudyCell*>& cells) {
  const ChildLaunch launch{spec, paths, o, cells, child_threads(o)};
  fs::create_directories(paths.dir + "/logs");
  StudyProgress progress(cells.size(), o.jobs);
  ChildrenState state;
  const StopChildrenOnThrow guard{state.running};
  constexpr double kProgressSeconds = 15.0;
  auto last_report = Clock::now();
  while (state.next < cells.size() || !state.running.empty()) {
    forward_stop(o.stop, state);
    start_cells(launch, progress, state);
    if (state.running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      // Every so often, each running cell's latest training line.
      if (seconds_since(last_report) >= kProgressSeconds) {
        last_report = Clock::now();
        report_running(paths, state.running, progress);
      }
      continue;
    }
    const auto it = state.running.find(pid);
    if (it == state.running.end()) continue;
    const auto [cell, start] = it->second;
    state.running.erase(it);
    record_exit(*cell, start, status, paths, progress, state);
  }
  return children_exit_code(state, paths);
}

}  // namespace txl
