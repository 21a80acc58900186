// txl study --config STUDY.json [--out DIR] [--jobs N] [--threads T] [--baseline GROUP]
// txl study --config STUDY.json [--out DIR] --cell NAME [--cell NAME ...]
// txl study --config STUDY.json [--out DIR] --list | --report
//
// Signals as in train: the first SIGINT/SIGTERM stops after the current step with a
// checkpoint (--jobs: passed on to every running cell) and exits 128 + signal; running the
// same command again continues the study.
#include <sys/prctl.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <memory>
#include <string>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/cli/signals.h"
#include "txl/study/study.h"
#include "txl/util/env.h"

namespace txl {

namespace {

// This executable's path, for --jobs children and the commands --list prints.
std::string self_executable(const char* fallback) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return fallback;
  buf[n] = '\0';
  return buf;
}

// A --jobs child of a study (kStudyParentEnv names the study's pid) treats a repeated
// signal as the same stop request and stops cleanly when the study dies (a closed terminal,
// kill -9) instead of training on unseen.
bool is_study_child() {
  const auto parent = env_text(kStudyParentEnv);
  return parent && std::to_string(::getppid()) == *parent;
}

void stop_with_the_study() {
  ::prctl(PR_SET_PDEATHSIG, SIGINT);
  if (!is_study_child()) std::raise(SIGINT);  // it died before prctl took effect
}

}  // namespace

void setup_study(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StudyOptions>();
  auto* cmd = app.add_subcommand(
      "study",
      "Train every cell of a grid (encodings x seeds x ...), evaluate all at every length and "
      "report perplexity with seed-level intervals (results.json, report.md, plots)");
  cmd->add_option("--config,-c", o->config_path,
                  "Study config: base config, grid of keys with lists of values, eval block")
      ->required();
  cmd->add_option("--out,-o", o->out_dir, "Study folder (default runs/study-<config name>)");
  auto* jobs = cmd->add_option("--jobs,-j", o->jobs,
                               "Cells trained at once, as child processes sharing the cores");
  cmd->add_option("--threads", o->threads,
                  "Threads per cell, 0 to 1024 (0 = all cores, divided among --jobs)");
  cmd->add_option(
      "--baseline", o->baseline,
      "Encoding the others are compared with (default: the config's, or the grid's first)");
  auto* cell = cmd->add_option("--cell", o->cells,
                               "Run only this cell (repeatable; for schedulers: see --list)");
  auto* list = cmd->add_flag(
      "--list", o->list, "Print one self-contained command per cell and its state; run nothing");
  auto* report = cmd->add_flag("--report", o->report_only,
                               "Write results.json and report.md from the finished cells");
  list->excludes(report);
  list->excludes(cell);
  report->excludes(cell);
  jobs->excludes(cell);
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    check_threads(o->threads, "--threads");
    o->executable = self_executable("txl");
    o->stop = &stop_signal();
    const bool child = !o->cells.empty() && is_study_child();
    SignalScope signals(/*second_exits=*/!child);
    if (child) stop_with_the_study();
    exit_code = run_study(*o);
  });
}

}  // namespace txl
