#include "txl/study/study.h"

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
#include <thread>

#include "txl/platform/cpu.h"
#include "txl/platform/process.h"
#include "txl/platform/runtime.h"
#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"
#include "txl/study/study_report.h"
#include "txl/study/study_stats.h"
#include "txl/util/clock.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:@,+") == std::string::npos)
    return s;
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// True for an empty folder and for one that holds only the temporaries of a manifest being
// written (several --cell tasks of a scheduler can start on a new study at once).
bool only_manifest_temporaries(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("study.json.tmp", 0) != 0) return false;
  }
  return true;
}

// Refuses a folder that is neither empty nor a study, and a study whose recorded manifest
// this config cannot continue; writes the manifest when it is new or gained grid values.
void check_and_record_manifest(const StudySpec& spec, const StudyPaths& paths, bool write) {
  const json now = study_manifest(spec);
  if (is_regular_file(paths.manifest())) {
    const json saved = read_json_file(paths.manifest());
    const auto diffs = study_differences(saved, now);
    if (!diffs.empty()) {
      throw InputError(spec.source + " does not match the study in " + paths.dir + " (" +
                       paths.manifest() + " vs now: " + join(diffs, "; ") +
                       "); only values added to the grid can join an existing study. Use "
                       "another --out for a different study");
    }
    if (saved == now || !write) return;
  } else if (is_directory(paths.dir) && !only_manifest_temporaries(paths.dir)) {
    throw InputError("--out " + paths.dir + " is a folder that holds no study (" +
                     paths.manifest() +
                     " is missing) and is not empty; give an empty or new folder");
  } else if (fs::exists(paths.dir) && !is_directory(paths.dir)) {
    throw InputError("--out " + paths.dir + " exists and is not a folder");
  }
  if (!write) return;
  fs::create_directories(paths.dir);
  write_file_atomic(paths.manifest(), now.dump(2) + "\n");
}

std::string machine_line() {
  const CpuFlags flags = detect_cpu_flags();
  return fmt::format("{} ({}), {} cores", cpu_model_name(), to_string(flags),
                     std::thread::hardware_concurrency());
}

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

void print_states(const StudySpec& spec, const StudyPaths& paths) {
  for (const auto& cell : spec.cells)
    fmt::print(stderr, "[study]   {:<32} {}\n", cell.name,
               to_string(cell_state(spec, cell, paths)));
}

// Runs the cells one after another in this process; the exit code.
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

// Runs the cells as `txl study --cell NAME` children, `jobs` at a time, each with its share
// of the cores; output goes to DIR/logs/<cell>.log. The exit code.
int run_children(const StudySpec& spec, const StudyPaths& paths, const StudyOptions& o,
                 const std::vector<const StudyCell*>& cells) {
  const int64_t cores = std::max<unsigned>(1, std::thread::hardware_concurrency());
  const int64_t threads = o.threads > 0 ? o.threads : std::max<int64_t>(1, cores / o.jobs);
  fs::create_directories(paths.dir + "/logs");
  StudyProgress progress(cells.size(), o.jobs);
  std::map<pid_t, std::pair<const StudyCell*, Clock::time_point>> running;
  // Leaving by an exception stops the running cells (cleanly) and waits for them, so none
  // trains on holding its run's lock where the next study would find it.
  struct StopChildrenOnThrow {
    std::map<pid_t, std::pair<const StudyCell*, Clock::time_point>>& running;
    int uncaught = std::uncaught_exceptions();
    ~StopChildrenOnThrow() {
      if (std::uncaught_exceptions() == uncaught) return;
      for (const auto& entry : running) ::kill(entry.first, SIGINT);
      for (const auto& entry : running) ::waitpid(entry.first, nullptr, 0);
    }
  } guard{running};
  size_t next = 0;
  int failure = 0, signal = 0;
  bool forwarded = false;  // the study's own stop passed on to the running cells
  constexpr double kProgressSeconds = 15.0;
  auto last_report = Clock::now();
  std::vector<std::string> failed;
  while (next < cells.size() || !running.empty()) {
    if (o.stop && o.stop->load() != 0 && !forwarded) {
      forwarded = true;
      if (signal == 0) signal = o.stop->load();
      for (const auto& [pid, cell] : running) ::kill(pid, SIGINT);
    }
    const bool stopping = signal != 0;
    while (!stopping && failure == 0 && next < cells.size() &&
           static_cast<int64_t>(running.size()) < o.jobs) {
      const StudyCell* cell = cells[next++];
      if (cell_state(spec, *cell, paths) == CellState::kDone) {
        progress.finished(0, false);
        fmt::print(stderr, "{}\n", progress.line(cell->name + ": done (reused)"));
        continue;
      }
      std::vector<std::string> args = {"study",    "--config",  o.config_path,
                                       "--out",    paths.dir,   "--cell",
                                       cell->name, "--threads", std::to_string(threads)};
      const pid_t pid = spawn_cell(o.executable, args, paths.log(cell->name));
      running[pid] = {cell, Clock::now()};
      fmt::print(stderr, "{}\n",
                 progress.line(fmt::format("{}: running ({} threads, log {})", cell->name, threads,
                                           paths.log(cell->name))));
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      // Every so often, each running cell's latest training line.
      if (seconds_since(last_report) >= kProgressSeconds) {
        last_report = Clock::now();
        for (const auto& [child, entry] : running) {
          const std::string line = last_progress_line(paths.log(entry.first->name));
          if (!line.empty()) fmt::print(stderr, "[study]   {}: {}\n", entry.first->name, line);
        }
        fmt::print(stderr, "{}\n", progress.line(fmt::format("{} running", running.size())));
      }
      continue;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto [cell, start] = it->second;
    running.erase(it);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0) {
      progress.finished(seconds_since(start), true);
      fmt::print(stderr, "{}\n", progress.line(cell->name + ": done"));
    } else if (signal != 0 || code == 130 || code == 143) {
      fmt::print(stderr, "[study] {} stopped (exit {}); its checkpoint is saved\n", cell->name,
                 code);
      if (signal == 0) signal = code - 128;
    } else {
      failure = code;
      failed.push_back(cell->name);
      fmt::print(stderr, "[study] {} failed (exit {}); see {}\n", cell->name, code,
                 paths.log(cell->name));
    }
  }
  if (signal != 0) {
    fmt::print(stderr, "[study] interrupted; run the same command again to continue the study\n");
    return 128 + signal;
  }
  if (failure != 0) {
    throw std::runtime_error("study cells failed: " + join(failed) + " (logs in " + paths.dir +
                             "/logs/)");
  }
  return 0;
}

int write_report(const StudySpec& spec, const StudyPaths& paths, const StudyOptions& o,
                 double wall_seconds) {
  std::vector<CellResults> cells;
  for (const auto& cell : spec.cells) {
    if (auto c = read_cell_results(spec, cell, paths)) cells.push_back(std::move(*c));
  }
  if (cells.empty()) {
    throw InputError("no cell of " + paths.dir +
                     " is finished yet; nothing to report (run txl "
                     "study --config " +
                     o.config_path + " --out " + paths.dir + ")");
  }
  const std::string baseline = o.baseline.empty() ? spec.baseline : o.baseline;
  const StudyStats stats = compute_study_stats(spec, cells, baseline);
  StudyReportInfo info{o.config_path, paths.dir, machine_line(), wall_seconds};
  for (const auto& path : write_study_report(spec, paths, cells, stats, info))
    fmt::print("wrote {}\n", path);
  if (!stats.missing_cells.empty())
    fmt::print("note: {} of {} cells are not finished and not in the report: {}\n",
               stats.missing_cells.size(), spec.cells.size(), join(stats.missing_cells));
  return 0;
}

}  // namespace

std::string default_study_dir(const std::string& config_path) {
  return "runs/study-" + fs::path(config_path).stem().string();
}

int run_study(const StudyOptions& o) {
  const auto start = Clock::now();
  // 1. Every check before anything is written.
  if (o.config_path.empty()) throw InputError("txl study needs --config FILE (a study config)");
  if (o.jobs < 1) throw InputError("--jobs " + std::to_string(o.jobs) + " must be >= 1");
  const StudySpec spec = read_study(o.config_path, o.threads);
  const StudyPaths paths{o.out_dir.empty() ? default_study_dir(o.config_path) : o.out_dir};
  if (!o.baseline.empty() &&
      std::none_of(spec.cells.begin(), spec.cells.end(),
                   [&](const StudyCell& c) { return c.encoding == o.baseline; })) {
    std::vector<std::string> encodings;
    for (const auto& v : spec.grid.front().values) encodings.push_back(v.dump());
    throw InputError("--baseline " + o.baseline + " is not an encoding of the study's grid (" +
                     join(encodings) + ")");
  }
  std::vector<const StudyCell*> cells;
  for (const auto& name : o.cells) {
    const StudyCell* cell = find_cell(spec, name);
    if (!cell) {
      std::vector<std::string> names;
      for (const auto& c : spec.cells) names.push_back(c.name);
      throw InputError("--cell " + name + " is not a cell of " + o.config_path +
                       "; cells: " + join(names));
    }
    cells.push_back(cell);
  }
  if (o.cells.empty())
    for (const auto& c : spec.cells) cells.push_back(&c);

  if (o.list) {
    // Recorded, so that the cells a scheduler starts at once all find the same study.
    check_and_record_manifest(spec, paths, /*write=*/true);
    const std::string cwd = fs::current_path().string();
    for (const auto& cell : spec.cells) {
      fmt::print("cd {} && {} study --config {} --out {} --cell {}  # {}\n", shell_quote(cwd),
                 shell_quote(o.executable), shell_quote(o.config_path), shell_quote(paths.dir),
                 cell.name, to_string(cell_state(spec, cell, paths)));
    }
    fmt::print("# then: {} study --config {} --out {} --report\n", shell_quote(o.executable),
               shell_quote(o.config_path), shell_quote(paths.dir));
    return 0;
  }
  check_and_record_manifest(spec, paths, /*write=*/!o.report_only);
  if (o.report_only) return write_report(spec, paths, o, 0.0);

  // 2. The cells.
  fmt::print(stderr, "[study] {}: {} cells ({} groups x seeds), {} protocols, lengths {} -> {}\n",
             o.config_path, spec.cells.size(), spec.groups.size(), spec.protocols.size(),
             spec.eval.lengths.size(), paths.dir);
  if (o.cells.empty()) print_states(spec, paths);
  const int code = o.jobs > 1 && cells.size() > 1 ? run_children(spec, paths, o, cells)
                                                  : run_in_process(spec, paths, cells, o.stop);
  if (code != 0 || !o.cells.empty()) return code;

  // 3. Statistics and report.
  return write_report(spec, paths, o, seconds_since(start));
}

}  // namespace txl
