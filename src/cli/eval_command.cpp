// txl eval --run DIR [--split valid|test] [--lengths 64,128] [--method M] [--json FILE] ...
#include <filesystem>
#include <memory>

#include <spdlog/fmt/fmt.h>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/report.h"
#include "txl/eval/request.h"
#include "txl/platform/runtime.h"
#include "txl/train/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

struct EvalCommandOptions {
  std::string run_dir;
  std::string split;
  std::string lengths;
  std::string method = "nonoverlap";
  std::string json_path;
  std::string checkpoint = "best";
  std::string precision = "fp32";
  int64_t stride = 0;
  int64_t mem_len = -1;
  int64_t clamp_len = -1;
  int64_t streams = 16;
  int64_t max_tokens = 0;
  int64_t threads = 0;
  bool per_position = false;
  bool no_cache = false;
};

int run_eval(const EvalCommandOptions& o) {
  // Validate every option before any work, so bad input writes nothing.
  EvalSettings settings;
  settings.method = parse_eval_method(o.method);
  settings.precision = parse_precision(o.precision, "--precision");
  settings.stride = o.stride;
  settings.mem_len = o.mem_len;
  settings.clamp_len = o.clamp_len;
  settings.streams = o.streams;
  settings.max_tokens = o.max_tokens;
  if (o.checkpoint != "best" && o.checkpoint != "last") {
    throw InputError("--checkpoint \"" + o.checkpoint + "\" is not valid; expected best or last");
  }
  if (!o.split.empty() && o.split != "valid" && o.split != "test") {
    throw InputError("--split \"" + o.split + "\" is not valid; expected valid or test");
  }
  if (o.max_tokens < 0) throw InputError("--max-tokens must be >= 0, got " + std::to_string(o.max_tokens));
  if (!o.json_path.empty()) {
    if (is_directory(o.json_path)) throw InputError("--json " + o.json_path + " is a directory; expected a file path");
    const auto parent = std::filesystem::path(o.json_path).parent_path();
    if (!parent.empty() && !is_directory(parent.string())) {
      throw InputError("--json " + o.json_path + ": directory " + parent.string() + " does not exist");
    }
  }
  const auto cli_lengths = o.lengths.empty() ? std::vector<int64_t>{} : parse_lengths(o.lengths, "--lengths");
  auto run = load_run(o.run_dir, o.checkpoint);
  const std::string split = o.split.empty() ? run.config.eval.split : o.split;
  const auto lengths = cli_lengths.empty() ? run.config.eval.lengths : cli_lengths;
  const int64_t batch_tokens = run.config.eval.batch_tokens;
  for (const int64_t length : lengths) {
    check_eval_request(run.model, make_eval_request(settings, length, batch_tokens));
  }
  set_threads(o.threads);

  EncodeStats stats;
  const auto ids = load_split(run.config.data.dir, split, run.vocab, &stats);
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
    report.results.push_back(evaluator.evaluate(make_eval_request(settings, length, batch_tokens), &cached));
    report.cached.push_back(cached);
    const auto& r = report.results.back();
    fmt::print(stderr, "  length {:>6}: ppl {:.3f} over {} tokens{}\n", length, r.ppl(), r.tokens,
               cached ? " (cached)" : "");
  }
  fmt::print("{}", format_report_table(report));
  if (stats.unknown > 0) {
    fmt::print("note: {} of {} tokens in {} are not in the run's vocabulary and were scored as <unk>\n",
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
  cmd->add_option("--split", o->split, "valid or test (default: the run's eval.split)");
  cmd->add_option("--lengths", o->lengths, "Comma-separated lengths (default: the run's eval.lengths)");
  cmd->add_option("--method", o->method, "nonoverlap | sliding | memory");
  cmd->add_option("--stride", o->stride, "sliding: window advance (default L/2)");
  cmd->add_option("--mem-len", o->mem_len, "memory: memory length (default: the evaluated length)");
  cmd->add_option("--streams", o->streams, "memory: parallel contiguous streams (default 16; 1 = one stream, slowest)");
  cmd->add_option("--clamp-len", o->clamp_len, "relative: cap distances (default: the run's model.clamp_len)");
  cmd->add_option("--max-tokens", o->max_tokens, "Score at most this many tokens (0 = the whole split)");
  cmd->add_option("--checkpoint", o->checkpoint, "best or last");
  cmd->add_option("--precision", o->precision, "fp32 or bf16");
  cmd->add_option("--threads", o->threads, "Threads (0 = all cores)");
  cmd->add_flag("--per-position", o->per_position, "Also show mean NLL per position inside the window");
  cmd->add_flag("--no-cache", o->no_cache, "Evaluate again even when RUN/eval-cache holds the result (and refresh it)");
  cmd->add_option("--json", o->json_path, "Also write the results as JSON to this file");
  cmd->callback([o, &exit_code] { exit_code = run_eval(*o); });
}

}  // namespace txl
