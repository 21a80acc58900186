// txl study: the checks before anything is written, the manifest a re-run must match,
// --list, and the report; running the cells is in study_runner.cpp.
#include "txl/study/study.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "txl/platform/cpu.h"
#include "txl/platform/runtime.h"
#include "txl/run/run_dir.h"
#include "txl/study/study_cell.h"
#include "txl/study/study_checks.h"
#include "txl/study/study_config.h"
#include "txl/study/study_report.h"
#include "txl/study/study_runner.h"
#include "txl/study/study_stats.h"
#include "txl/util/clock.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
    const auto has_results = [&paths](const std::string& cell) {
      const RunPaths run{paths.run_dir(cell)};
      return is_regular_file(paths.cell_file(cell)) || is_regular_file(run.last_checkpoint()) ||
             is_regular_file(run.best_checkpoint());
    };
    const auto diffs = study_differences(saved, now, has_results);
    if (!diffs.empty()) {
      throw InputError(spec.source + " does not match the study in " + paths.dir + " (" +
                       paths.manifest() + " vs now: " + join(diffs, "; ") +
                       "); only values added to the grid, or removed where their cells never "
                       "trained, can join an existing study. Use another --out for a different "
                       "study");
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

void print_states(const StudySpec& spec, const StudyPaths& paths) {
  for (const auto& cell : spec.cells)
    fmt::print(stderr, "[study]   {:<32} {}\n", cell.name,
               to_string(cell_state(spec, cell, paths)));
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

// --threads shared among the --jobs: 0 = an equal share of the cores; a request far above
// the cores is capped at that share, with a warning (platform/runtime.h).
StudyOptions share_threads(const StudyOptions& o) {
  StudyOptions shared = o;
  if (o.threads == 0 && o.jobs == 1) return shared;  // one cell at a time on every core
  const ThreadShare share = share_cores(o.threads, o.jobs);
  if (!share.warning.empty())
    fmt::print(stderr, "warning: --jobs {} --threads {}: {}\n", o.jobs, o.threads, share.warning);
  shared.threads = share.threads;
  return shared;
}

void check_baseline(const StudySpec& spec, const StudyOptions& o) {
  if (o.baseline.empty() ||
      std::any_of(spec.cells.begin(), spec.cells.end(),
                  [&](const StudyCell& c) { return c.encoding == o.baseline; }))
    return;
  std::vector<std::string> encodings;
  for (const auto& v : spec.grid.front().values) encodings.push_back(v.dump());
  throw InputError("--baseline " + o.baseline + " is not an encoding of the study's grid (" +
                   join(encodings) + ")");
}

// The cells --cell names (each once: a repeated one is refused, as a repeated grid value
// is), or every cell.
std::vector<const StudyCell*> selected_cells(const StudySpec& spec, const StudyOptions& o) {
  std::vector<const StudyCell*> cells;
  for (const auto& name : o.cells) {
    const StudyCell* cell = find_cell(spec, name);
    if (!cell) {
      std::vector<std::string> names;
      for (const auto& c : spec.cells) names.push_back(c.name);
      throw InputError("--cell " + name + " is not a cell of " + o.config_path +
                       "; cells: " + join(names));
    }
    if (std::find(cells.begin(), cells.end(), cell) != cells.end())
      throw InputError("--cell " + name + " is given twice; name each cell once");
    cells.push_back(cell);
  }
  if (o.cells.empty())
    for (const auto& c : spec.cells) cells.push_back(&c);
  return cells;
}

// --list: the study recorded (so that the cells a scheduler starts at once all find the
// same one) and one command per cell printed.
int list_cells(const StudySpec& spec, const StudyPaths& paths, const StudyOptions& o) {
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

}  // namespace

std::string default_study_dir(const std::string& config_path) {
  return "runs/study-" + fs::path(config_path).stem().string();
}

int run_study(const StudyOptions& options) {
  const auto start = Clock::now();
  // 1. Every check before anything is written.
  if (options.config_path.empty())
    throw InputError("txl study needs --config FILE (a study config)");
  if (options.jobs < 1)
    throw InputError("--jobs " + std::to_string(options.jobs) + " must be >= 1");
  // No more processes than cells: --jobs 1000 on 4 cells shares the cores among 4.
  StudyOptions capped = options;
  const auto grid_cells = static_cast<int64_t>(read_study(options.config_path, 0).cells.size());
  capped.jobs = std::max<int64_t>(1, std::min<int64_t>(options.jobs, grid_cells));
  const StudyOptions o = share_threads(capped);
  const StudySpec spec = read_study(o.config_path, o.threads);
  const StudyPaths paths{o.out_dir.empty() ? default_study_dir(o.config_path) : o.out_dir};
  check_folder_can_be_made(paths.dir, "--out");
  check_baseline(spec, o);
  const std::vector<const StudyCell*> cells = selected_cells(spec, o);
  if (o.list) return list_cells(spec, paths, o);
  check_and_record_manifest(spec, paths, /*write=*/false);
  if (o.report_only) return write_report(spec, paths, o, 0.0);
  check_cells_can_train(spec, paths, cells, o.jobs);
  check_and_record_manifest(spec, paths, /*write=*/true);

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
