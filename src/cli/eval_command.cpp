// txl eval --run DIR [--split valid|test] [--lengths 64,128] [--method M] [--json FILE] ...
#include <spdlog/fmt/fmt.h>

#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/eval_options.h"
#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/eval_memory.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/progress.h"
#include "txl/eval/report.h"
#include "txl/eval/request.h"
#include "txl/platform/runtime.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

struct EvalCommandOptions : EvalCliOptions {
  std::string run_dir;
};

int run_eval(const EvalCommandOptions& o) {
  // Every option before any work, so bad input writes nothing.
  const auto checked = check_eval_options(o);
  const EvalSettings& settings = checked.settings;
  const auto& cli_lengths = checked.lengths;
  auto run = load_run(o.run_dir, o.checkpoint);
  const std::string split = o.split.empty() ? run.config.eval.split : o.split;
  const auto lengths = cli_lengths.empty() ? run.config.eval.lengths : cli_lengths;
  const int64_t batch_tokens = run.config.eval.batch_tokens;
  for (const int64_t length : lengths) {
    check_eval_request(
        run.model, make_eval_request(settings, length, batch_tokens, training_length(run.config)));
  }
  set_threads(o.threads);

  EncodeStats stats;
  const auto ids = load_split(run.config.data.dir, split, run.vocab, &stats);
  // Every length must fit in memory before the first one is evaluated.
  for (const int64_t length : lengths) {
    check_eval_fits(run.model,
                    make_eval_request(settings, length, batch_tokens, training_length(run.config)),
                    static_cast<int64_t>(ids.size()));
  }
  CachedEvaluator evaluator(run, o.checkpoint, split, ids, !o.no_cache);
  EvalReport report;
  report.run = o.run_dir;
  report.split = split;
  report.encoding = to_string(run.config.model.pos_encoding);
  report.tokenizer = to_string(run.config.data.tokenizer);
  report.train_length = run.config.train.tgt_len;
  report.checkpoint = evaluator.subject().checkpoint;
  report.checkpoint_step = run.state.step;
  report.per_position = o.per_position;
  for (const int64_t length : lengths) {
    bool cached = false;
    EvalProgressPrinter progress(fmt::format("length {}", length));
    report.results.push_back(evaluator.evaluate(
        make_eval_request(settings, length, batch_tokens, training_length(run.config)), &cached,
        progress.callback()));
    report.cached.push_back(cached);
    const auto& r = report.results.back();
    fmt::print(stderr, "  length {:>6}: ppl {:.3f} over {} tokens{}\n", length, r.ppl(), r.tokens,
               cached ? " (cached)" : "");
  }
  fmt::print("{}", format_report_table(report));
  if (stats.unknown > 0) {
    fmt::print(
        "note: {} of {} tokens in {} are not in the run's vocabulary and were scored as <unk>\n",
        stats.unknown, stats.tokens, split);
  }
  if (!o.json_path.empty()) {
    write_file_atomic(o.json_path, report_to_json(report).dump(2) + "\n");
    fmt::print("wrote {}\n", o.json_path);
  }
  return 0;
}

}  // namespace

void setup_eval(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EvalCommandOptions>();
  auto* cmd = app.add_subcommand("eval", "Perplexity of a trained run at several sequence lengths");
  cmd->add_option("--run", o->run_dir, "Run directory written by txl train")->required();
  add_eval_options(cmd, *o,
                   {"the run's", "the run's",
                    "Evaluate again even when RUN/eval-cache holds the result (and refresh it)",
                    "Also write the results as JSON to this file"});
  cmd->callback([o, &exit_code] { exit_code = run_eval(*o); });
}

}  // namespace txl
