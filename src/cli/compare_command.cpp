// txl compare RUN RUN ... [--lengths 64,128] [--method M] [--split S] [--json F] [--plot F.png]
#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/eval_options.h"
#include "txl/eval/compare_runs.h"
#include "txl/platform/runtime.h"
#include "txl/probe/assessment.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

struct CompareCommandOptions : EvalCliOptions {
  std::vector<std::string> run_dirs;
  std::string plot_path;
};

bool ends_with_png(const std::string& path) {
  const auto ext = fs::path(path).extension().string();
  return ext == ".png" || ext == ".PNG";
}

// The .svg written next to a --plot .png ("" without --plot).
std::string svg_beside(const std::string& png) {
  return png.empty() ? "" : fs::path(png).replace_extension(".svg").string();
}

// --json must not be the file --plot writes (one would silently replace the other).
void check_distinct_outputs(const CompareCommandOptions& o) {
  if (o.json_path.empty() || o.plot_path.empty()) return;
  const auto same = [](const std::string& a, const std::string& b) {
    std::error_code ea, eb;
    const fs::path pa = fs::weakly_canonical(link_target(a), ea);
    const fs::path pb = fs::weakly_canonical(link_target(b), eb);
    return !ea && !eb && pa == pb;
  };
  for (const auto& plot : {o.plot_path, svg_beside(o.plot_path)}) {
    if (same(o.json_path, plot)) {
      throw InputError("--json " + o.json_path + " is the file --plot " + o.plot_path +
                       " writes (" + plot + "); give them different paths");
    }
  }
}

int run_compare(const CompareCommandOptions& o) {
  // Every option before any work: bad input writes nothing. A DIR@aid run takes --aid-factor.
  bool runs_have_aids = false;
  std::string aid_in_use;  // the first run given an aid, for the probes' refusal
  for (const auto& arg : o.run_dirs) {
    if (parse_run_spec(arg, EvalSettings{}).settings.aid == ExtrapolationAid::kNone) continue;
    runs_have_aids = true;
    if (aid_in_use.empty()) aid_in_use = "run " + arg;
  }
  const EvalPlan plan = check_eval_options(o, runs_have_aids);
  check_output_path(o.plot_path, "--plot");
  if (!o.plot_path.empty() && !ends_with_png(o.plot_path)) {
    throw InputError("--plot " + o.plot_path + " must end in .png (an .svg is written next to it)");
  }
  check_output_path(svg_beside(o.plot_path), "--plot's .svg");
  check_distinct_outputs(o);
  if (plan.settings.aid != ExtrapolationAid::kNone) aid_in_use = "--aid " + o.aid;
  const ProbeRequest probe_request = check_probe_options(o, aid_in_use);
  set_threads(o.threads);
  const auto [outcome, probes] = assess_runs(CompareOptions{plan, o.run_dirs}, probe_request);
  const auto& [c, stats] = outcome;
  ProbeComparison probe_table;
  if (!probe_request.names.empty()) {
    std::vector<std::string> names;
    for (const auto& run : c.runs) names.push_back(run.name);
    probe_table = compare_probe_outputs(names, probes);
  }

  // Table and JSON first, so a missing plotting tool loses nothing.
  fmt::print("{}", format_comparison_table(c));
  fmt::print("{}", format_probe_comparison(probe_table));
  if (stats.unknown > 0) {
    fmt::print(
        "note: {} of {} tokens in {} are not in the runs' vocabulary and were scored as <unk>\n",
        stats.unknown, stats.tokens, c.split);
  }
  if (!o.json_path.empty()) {
    auto json = comparison_to_json(c);
    if (!probe_request.names.empty()) {
      json["probes"] = to_json(probe_table);
      json["probe_runs"] = nlohmann::json::array();
      for (const auto& run : probes) json["probe_runs"].push_back(probes_to_json(run));
    }
    write_json_output(o.json_path, json);
  }
  if (!o.plot_path.empty()) {
    const std::string svg = svg_beside(o.plot_path);
    check_output_path(o.plot_path, "--plot");  // again: the evaluation took a while
    check_output_path(svg, "--plot's .svg");
    write_plot(comparison_plot(c), o.plot_path, svg);
    fmt::print("wrote {} and {}\n", o.plot_path, svg);
  }
  return 0;
}

}  // namespace

void setup_compare(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareCommandOptions>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Evaluate several runs on the same tokens and compare them side by side (table, JSON, plot)");
  cmd->add_option("runs", o->run_dirs,
                  "Run directories written by txl train (same vocabulary); DIR@aid or "
                  "DIR@aid:factor evaluates that run with an aid (e.g. runs/rope@yarn)")
      ->required();
  add_eval_options(cmd, *o,
                   {"the first run's", "each run's",
                    "Evaluate again even when a run's eval-cache holds the result (and refresh it)",
                    "Also write the comparison as JSON to this file"});
  cmd->add_option("--plot", o->plot_path,
                  "Draw perplexity against length into this .png (and .svg) with gnuplot");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_compare(*o);
  });
}

}  // namespace txl
