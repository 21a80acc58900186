// txl compare RUN RUN ... [--lengths 64,128] [--method M] [--split S] [--json F] [--plot F.png]
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/eval_options.h"
#include "txl/config/encodings.h"
#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/compare.h"
#include "txl/eval/plot.h"
#include "txl/eval/progress.h"
#include "txl/eval/request.h"
#include "txl/platform/runtime.h"
#include "txl/run/run_dir.h"
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

std::string vocab_summary(const LoadedRun& run) {
  return fmt::format("{} tokenizer, {} tokens, checksum {:016x}", to_string(run.vocab.kind()),
                     run.vocab.size(), run.vocab.checksum());
}

// One positional argument of compare: DIR, DIR@aid or DIR@aid:factor.
struct RunSpec {
  std::string dir;
  std::string suffix;  // "@aid..." as given, appended to the column's name ("" without one)
  EvalSettings settings;
};

RunSpec parse_run_spec(const std::string& arg, const EvalSettings& base) {
  RunSpec spec{arg, "", base};
  const size_t at = arg.rfind('@');
  // A folder may contain '@': only a known aid after it makes it a spec.
  if (at == std::string::npos || at == 0 || fs::exists(arg)) return spec;
  const std::string tail = arg.substr(at + 1);
  const size_t colon = tail.find(':');
  const std::string name = tail.substr(0, colon);
  const auto names = extrapolation_aid_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return spec;
  spec.dir = arg.substr(0, at);
  spec.suffix = "@" + tail;
  spec.settings.aid = parse_extrapolation_aid(name, arg);
  if (colon != std::string::npos) {
    const std::string factor = tail.substr(colon + 1);
    const auto value = parse_aid_factor(factor);
    if (!value) {
      throw InputError(arg + ": the aid factor \"" + factor +
                       "\" is not valid; expected a number >= 1, e.g. " + spec.dir + "@" + name +
                       ":4");
    }
    spec.settings.aid_factor = *value;
  }
  return spec;
}

PlotSpec make_plot_spec(const Comparison& c) {
  PlotSpec spec;
  spec.title = fmt::format("{}: perplexity vs evaluated length (method {}, {} split)", c.corpus,
                           c.method, c.split);
  spec.xlabel = "evaluated length L (tokens, log2 scale)";
  spec.ylabel = "perplexity";
  spec.mark_label = "trained at {}";
  for (const auto& run : c.runs) {
    if (!run.supported) continue;
    PlotSeries s;
    s.label = fmt::format("{} ({})", run.name, run.encoding);
    for (size_t i = 0; i < run.results.size(); ++i) {
      if (!run.evaluated(i)) continue;  // past a learned table
      const auto& e = run.results[i];
      const auto ci = mean_nll_interval(e, c.bootstrap);
      s.x.push_back(e.length);
      s.y.push_back(e.ppl());
      s.lo.push_back(ci.valid ? std::exp(ci.lo) : e.ppl());
      s.hi.push_back(ci.valid ? std::exp(ci.hi) : e.ppl());
    }
    spec.series.push_back(s);
    if (std::find(spec.marks.begin(), spec.marks.end(), run.train_length) == spec.marks.end()) {
      spec.marks.push_back(run.train_length);
    }
  }
  return spec;
}

int run_compare(const CompareCommandOptions& o) {
  // 1. Every option, before any work: bad input writes nothing.
  if (o.run_dirs.empty()) throw InputError("txl compare needs at least one run directory");
  const auto checked = check_eval_options(o);
  const EvalSettings& settings = checked.settings;
  const auto& cli_lengths = checked.lengths;
  check_output_path(o.plot_path, "--plot");
  if (!o.plot_path.empty() && !ends_with_png(o.plot_path)) {
    throw InputError("--plot " + o.plot_path + " must end in .png (an .svg is written next to it)");
  }

  // 2. The runs: complete, same vocabulary, same text to score. A run given as DIR@aid
  // (DIR@aid:factor) is evaluated with that aid, so one run can stand in several columns.
  std::vector<RunSpec> specs;
  for (const auto& arg : o.run_dirs) specs.push_back(parse_run_spec(arg, settings));
  std::vector<LoadedRun> runs;
  for (const auto& spec : specs) runs.push_back(load_run(spec.dir, o.checkpoint));
  for (size_t i = 1; i < runs.size(); ++i) {
    if (runs[i].vocab.checksum() != runs[0].vocab.checksum()) {
      throw InputError("runs " + specs[0].dir + " and " + specs[i].dir +
                       " have different vocabularies (" + vocab_summary(runs[0]) + " vs " +
                       vocab_summary(runs[i]) +
                       "); compare needs runs trained with the same tokenizer on the same corpus");
    }
  }
  const std::string split = o.split.empty() ? runs[0].config.eval.split : o.split;
  const auto lengths = cli_lengths.empty() ? runs[0].config.eval.lengths : cli_lengths;
  std::vector<bool> supported(runs.size());
  std::vector<std::vector<std::string>> skipped(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    supported[r] = settings.method != EvalMethod::kMemory || runs[r].model->has_memory();
    if (!supported[r]) continue;
    for (const int64_t length : lengths) {
      const auto request =
          make_eval_request(specs[r].settings, length, runs[r].config.eval.batch_tokens,
                            training_length(runs[r].config));
      skipped[r].push_back(length_unavailable(runs[r].config.model, request));
      if (skipped[r].back().empty()) check_eval_request(runs[r].model, request);
    }
  }
  if (std::none_of(supported.begin(), supported.end(), [](bool s) { return s; })) {
    throw InputError(
        "--method memory needs an encoding with memory; none of the runs has one (use nonoverlap "
        "or sliding)");
  }
  std::map<std::string, std::vector<int32_t>> splits;  // by data.dir: runs on one corpus share it
  uint64_t checksum0 = 0;
  EncodeStats stats;
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto& dir = runs[r].config.data.dir;
    if (!splits.count(dir))
      splits[dir] = load_split(dir, split, runs[r].vocab, r == 0 ? &stats : nullptr);
    const uint64_t sum = checksum_ids(splits[dir]);
    if (r == 0) checksum0 = sum;
    if (sum != checksum0) {
      throw InputError("runs " + o.run_dirs[0] + " and " + o.run_dirs[r] +
                       " would score different text: the " + split + " split of " +
                       runs[0].config.data.dir + " differs from that of " + dir);
    }
  }
  set_threads(o.threads);

  // 3. Evaluate (or reuse each run's cached results).
  Comparison c;
  c.data_dir = runs[0].config.data.dir;
  c.corpus = run_name(c.data_dir);
  c.split = split;
  c.tokenizer = to_string(runs[0].config.data.tokenizer);
  c.method = to_string(settings.method);
  c.lengths = lengths;
  c.per_position = o.per_position;
  for (size_t r = 0; r < runs.size(); ++r) {
    auto& run = runs[r];
    CompareRun cr;
    cr.dir = specs[r].dir;
    cr.name = run_name(cr.dir) + specs[r].suffix;
    cr.encoding = to_string(run.config.model.pos_encoding);
    cr.train_length = run.config.train.tgt_len;
    cr.checkpoint_step = run.state.step;
    cr.supported = supported[r];
    cr.skipped = skipped[r];
    CachedEvaluator evaluator(run, o.checkpoint, split, splits[run.config.data.dir], !o.no_cache);
    cr.checkpoint = evaluator.subject().checkpoint;
    if (cr.supported) {
      for (size_t i = 0; i < lengths.size(); ++i) {
        const int64_t length = lengths[i];
        bool cached = false;
        if (!cr.skipped[i].empty()) {
          EvalResult none;
          none.length = length;
          cr.results.push_back(none);
          cr.cached.push_back(false);
          continue;
        }
        EvalProgressPrinter progress(fmt::format("{} length {}", cr.name, length));
        cr.results.push_back(evaluator.evaluate(
            make_eval_request(specs[r].settings, length, run.config.eval.batch_tokens,
                              training_length(run.config)),
            &cached, progress.callback()));
        cr.cached.push_back(cached);
        fmt::print(stderr, "  {} length {:>6}: ppl {:.3f} over {} tokens{}\n", cr.name, length,
                   cr.results.back().ppl(), cr.results.back().tokens, cached ? " (cached)" : "");
      }
    }
    c.runs.push_back(std::move(cr));
  }

  // 4. Table and JSON first, so a missing plotting tool loses nothing.
  fmt::print("{}", format_comparison_table(c));
  if (stats.unknown > 0) {
    fmt::print(
        "note: {} of {} tokens in {} are not in the runs' vocabulary and were scored as <unk>\n",
        stats.unknown, stats.tokens, split);
  }
  if (!o.json_path.empty()) {
    write_file_atomic(o.json_path, comparison_to_json(c).dump(2) + "\n");
    fmt::print("wrote {}\n", o.json_path);
  }
  if (!o.plot_path.empty()) {
    const std::string svg = fs::path(o.plot_path).replace_extension(".svg").string();
    write_plot(make_plot_spec(c), o.plot_path, svg);
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
  cmd->callback([o, &exit_code] { exit_code = run_compare(*o); });
}

}  // namespace txl
