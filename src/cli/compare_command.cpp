// txl compare RUN RUN ... [--lengths 64,128] [--method M] [--split S | --text FILE...]
//             [--json F] [--plot F.png]
#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/eval_options.h"
#include "txl/eval/compare_runs.h"
#include "txl/eval/text_documents.h"
#include "txl/platform/runtime.h"
#include "txl/probe/assessment.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

struct CompareCommandOptions : EvalCliOptions {
  std::vector<std::string> run_dirs;
  std::string plot_path;
  std::vector<std::string> texts;  // --text FILE...: files to score instead of a split
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

// With --text: each file's tokens, <unk>s and every run's perplexity on it alone.
std::string format_texts(const CompareOutcome& outcome) {
  if (outcome.texts.empty()) return "";
  const Comparison& c = outcome.comparison;
  std::string out = "per file (each scored on its own; the table is their total):\n";
  for (const auto& t : outcome.texts) {
    out += fmt::format("  {}: {} tokens, {} <unk>", t.file, t.tokens, t.unknown);
    for (size_t i = 0; i < c.lengths.size(); ++i) {
      std::vector<std::string> cells;
      for (size_t r = 0; r < c.runs.size(); ++r) {
        cells.push_back(c.runs[r].name + " " +
                        (c.runs[r].evaluated(i) ? fmt::format("{:.3f}", t.results[r][i].ppl())
                                                : std::string("n/a")));
      }
      out += fmt::format(" | L {} ppl {}", c.lengths[i], join(cells));
    }
    out += "\n";
  }
  return out;
}

// {"file", "tokens", "unknown", "runs": [{"name", "results": [{"length", "tokens", "nll_sum",
// "ppl"}]}]} per file; an n/a length is left out.
nlohmann::json texts_to_json(const CompareOutcome& outcome) {
  const Comparison& c = outcome.comparison;
  nlohmann::json texts = nlohmann::json::array();
  for (const auto& t : outcome.texts) {
    nlohmann::json runs = nlohmann::json::array();
    for (size_t r = 0; r < c.runs.size(); ++r) {
      nlohmann::json results = nlohmann::json::array();
      for (size_t i = 0; i < c.lengths.size(); ++i) {
        if (!c.runs[r].evaluated(i)) continue;
        const EvalResult& e = t.results[r][i];
        results.push_back(
            {{"length", e.length}, {"tokens", e.tokens}, {"nll_sum", e.nll}, {"ppl", e.ppl()}});
      }
      runs.push_back({{"name", c.runs[r].name}, {"results", results}});
    }
    texts.push_back(
        {{"file", t.file}, {"tokens", t.tokens}, {"unknown", t.unknown}, {"runs", runs}});
  }
  return texts;
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
  check_text_options(o.texts, o.split);
  EvalPlan plan = check_eval_options(o, runs_have_aids);
  plan.texts = o.texts;
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
  const auto& [c, stats, texts] = outcome;
  ProbeComparison probe_table;
  if (!probe_request.names.empty()) {
    std::vector<std::string> names;
    for (const auto& run : c.runs) names.push_back(run.name);
    probe_table = compare_probe_outputs(names, probes);
  }

  // Table and JSON first, so a missing plotting tool loses nothing.
  fmt::print("{}", format_comparison_table(c));
  fmt::print("{}", format_texts(outcome));
  fmt::print("{}", format_probe_comparison(probe_table));
  for (const auto& t : texts)
    fmt::print(stderr, "{}", unknown_warning(t.file, t.tokens, t.unknown));
  if (stats.unknown > 0 && texts.empty()) {
    fmt::print(
        "note: {} of {} tokens in {} are not in the runs' vocabulary and were scored as <unk>\n",
        stats.unknown, stats.tokens, c.split);
  }
  if (!o.json_path.empty()) {
    auto json = comparison_to_json(c);
    if (!texts.empty()) json["texts"] = texts_to_json(outcome);
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
  cmd->add_option("--text", o->texts,
                  "Score these files instead of a split (each on its own, and the total; the "
                  "runs share one vocabulary, so the same tokens in the same windows); - is "
                  "standard input. --probes build their instances from the files joined in "
                  "order");
  cmd->add_option("--plot", o->plot_path,
                  "Draw perplexity against length into this .png (and .svg) with gnuplot");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    exit_code = run_compare(*o);
  });
}

}  // namespace txl
