// txl plot RUN [RUN ...] --out FILE.png [--x step|tokens] [--probes] [--json FILE]
//
// Draws what runs logged in their metrics.jsonl while training, runs overlaid. The first plot
// goes to FILE.png, every other beside it as FILE-NAME.png: training loss in FILE.png and
// validation perplexity in FILE-valid.png; with --probes, one plot per probe series family
// (the first in FILE.png, the others FILE-<series>.png). Everything is read and every output
// path checked before anything is written.
#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/cli/output_path.h"
#include "txl/eval/metrics_plots.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

struct PlotOptions {
  std::vector<std::string> run_dirs;
  std::string out;
  std::string x = "step";
  bool probes = false;
  std::string json_path;
};

// Each run's metrics.jsonl, read strictly; a folder named twice, a path that is no folder, a
// folder without metrics.jsonl or an empty one are refused.
std::vector<LabelledMetrics> read_runs(const std::vector<std::string>& dirs) {
  std::vector<std::string> seen;
  for (const auto& dir : dirs) {
    const FileKind kind = file_kind(dir);
    if (kind != FileKind::kDirectory) {
      throw InputError("run " + dir + " is " + describe(kind) +
                       "; expected a run directory written by txl train (it holds metrics.jsonl)");
    }
    const std::string key = same_file_key(dir);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InputError("run " + dir + " is given twice; name each run once");
    seen.push_back(key);
    if (file_kind(RunPaths{dir}.metrics()) == FileKind::kMissing) {
      throw InputError("run " + dir + " has no metrics.jsonl: is it a run directory written by " +
                       "txl train? (a run writes it from its first log interval on)");
    }
  }
  std::vector<LabelledMetrics> runs;
  const std::vector<std::string> labels = run_labels(dirs);
  for (size_t i = 0; i < dirs.size(); ++i) {
    std::string warning;
    RunMetrics m = read_run_metrics(RunPaths{dirs[i]}.metrics(), MetricsReading::kStrict, &warning);
    if (!warning.empty()) fmt::print(stderr, "warning: {}\n", warning);
    if (m.lines == 0) {
      throw InputError(m.path + " is empty: the run has logged nothing yet (its first line comes " +
                       "after train.log_interval steps)");
    }
    runs.push_back({labels[i], std::move(m)});
  }
  return runs;
}

// FILE.png for the first plot, FILE-NAME.png beside it for the others.
std::vector<std::string> output_files(const std::string& out,
                                      const std::vector<MetricsPlot>& plots) {
  std::vector<std::string> files;
  for (size_t i = 0; i < plots.size(); ++i) {
    fs::path p(out);
    if (i > 0) p.replace_filename(p.stem().string() + "-" + plots[i].name + p.extension().string());
    files.push_back(p.string());
  }
  return files;
}

// Every file this command writes: a path that can take it, none the same as another or as an
// input (the runs' folders and metrics files).
void check_outputs(const PlotOptions& o, const std::vector<std::string>& files) {
  std::vector<std::pair<std::string, std::string>> taken;  // same_file_key, why it is refused
  const std::string never = "; txl plot never writes over what it reads, choose another path";
  for (const auto& dir : o.run_dirs) {
    const std::string metrics = RunPaths{dir}.metrics();
    taken.emplace_back(same_file_key(dir), "is the run directory " + dir + never);
    taken.emplace_back(same_file_key(metrics), "is the input " + metrics + never);
  }
  std::vector<std::pair<std::string, std::string>> outputs;  // path, option
  for (const auto& f : files) outputs.emplace_back(f, "--out");
  if (!o.json_path.empty()) outputs.emplace_back(o.json_path, "--json");
  for (const auto& [path, option] : outputs) {
    const std::string key = same_file_key(path);
    for (const auto& [other, why] : taken) {
      if (key == other) throw InputError(option + " " + path + " " + why);
    }
    check_output_path(path, option);
    taken.emplace_back(key,
                       "is also written by --out (" + path + "); give each output its own path");
  }
}

int run_plot(const PlotOptions& o) {
  const auto ext = fs::path(o.out).extension().string();
  if (ext != ".png" && ext != ".PNG") {
    throw InputError("--out " + o.out + " must end in .png (the plots are PNG images)");
  }
  const MetricsAxis axis = o.x == "tokens" ? MetricsAxis::kTokens : MetricsAxis::kStep;
  const std::vector<LabelledMetrics> runs = read_runs(o.run_dirs);
  const std::vector<MetricsPlot> plots =
      o.probes ? probe_plots(runs, axis) : training_plots(runs, axis);
  const std::vector<std::string> files = output_files(o.out, plots);
  check_outputs(o, files);
  for (const auto& run : runs) {
    const bool has = o.probes ? !run.metrics.probes.empty() : !run.metrics.progress.empty();
    if (!has) {
      fmt::print(stderr, "note: {} has no {}; it is left out\n", run.metrics.path,
                 o.probes ? "probe results" : "progress lines");
    }
  }
  if (!o.probes && plots.size() == 1) {
    fmt::print(stderr, "note: no run has a validation yet; no validation plot drawn\n");
  }
  write_json_output(o.json_path, metrics_plots_json(plots, files, axis));
  for (size_t i = 0; i < plots.size(); ++i) {
    check_output_path(files[i], "--out");  // again, just before writing
    try {
      write_plot(plots[i].spec, files[i], "");
    } catch (const PlotToolMissing&) {
      throw std::runtime_error("cannot draw " + files[i] +
                               ": gnuplot is not installed (not found on PATH); install it with "
                               "`sudo apt-get install gnuplot-nox`" +
                               (o.json_path.empty() ? "" : " (--json was written)"));
    }
    fmt::print("wrote {} ({})\n", files[i], plots[i].spec.title);
  }
  return 0;
}

}  // namespace

void setup_plot(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PlotOptions>();
  auto* cmd = app.add_subcommand(
      "plot",
      "Draw runs' training loss and validation perplexity (or, with --probes, their probe "
      "results) against step from their metrics.jsonl, runs overlaid");
  cmd->add_option("runs", o->run_dirs, "Run directories written by txl train")->required();
  cmd->add_option("--out", o->out,
                  "The .png to draw: training loss here, validation perplexity in FILE-valid.png "
                  "beside it (--probes: the first series family here, each other in "
                  "FILE-<series>.png)")
      ->required();
  cmd->add_option("--x", o->x, "What the x axis counts: step (optimizer steps) or tokens (seen)")
      ->check(CLI::IsMember({"step", "tokens"}));
  cmd->add_flag("--probes", o->probes,
                "Draw the probe results logged during training (train.probes), value against "
                "step, one line per run and x, one plot per series family");
  cmd->add_option("--json", o->json_path, "Also write the series drawn as JSON to this file");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_plot(*o);
  });
}

}  // namespace txl
