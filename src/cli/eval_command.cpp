// txl eval --run DIR [--split valid|test] [--lengths 64,128] [--method M] [--json FILE] ...
#include <memory>

#include <spdlog/fmt/fmt.h>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/data/corpus.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/report.h"
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
  int64_t max_tokens = 0;
  int64_t threads = 0;
};

int run_eval(const EvalCommandOptions& o) {
  // Validate every option before any work.
  const auto method = parse_eval_method(o.method);
  const auto precision = parse_precision(o.precision, "--precision");
  if (o.checkpoint != "best" && o.checkpoint != "last") {
    throw InputError("--checkpoint \"" + o.checkpoint + "\" is not valid; expected best or last");
  }
  if (!o.json_path.empty() && is_directory(o.json_path)) {
    throw InputError("--json " + o.json_path + " is a directory; expected a file path");
  }
  auto run = load_run(o.run_dir, o.checkpoint);
  const std::string split = o.split.empty() ? run.config.eval.split : o.split;
  if (split != "valid" && split != "test") {
    throw InputError("--split \"" + split + "\" is not valid; expected valid or test");
  }
  const auto lengths = o.lengths.empty() ? run.config.eval.lengths : parse_lengths(o.lengths, "--lengths");
  set_threads(o.threads);

  EncodeStats stats;
  const auto ids = load_split(run.config.data.dir, split, run.vocab, &stats);
  EvalReport report;
  report.run = o.run_dir;
  report.split = split;
  report.encoding = to_string(run.config.model.pos_encoding);
  report.tokenizer = to_string(run.config.data.tokenizer);
  report.train_length = run.config.train.tgt_len;
  report.checkpoint_step = run.state.step;
  auto make_request = [&](int64_t length) {
    EvalRequest request;
    request.method = method;
    request.length = length;
    request.stride = o.stride;
    request.mem_len = o.mem_len >= 0 ? o.mem_len : length;
    request.clamp_len = o.clamp_len;
    request.batch_tokens = run.config.eval.batch_tokens;
    request.max_tokens = o.max_tokens;
    request.precision = precision;
    return request;
  };
  for (const int64_t length : lengths) check_eval_request(run.model, make_request(length));
  for (const int64_t length : lengths) {
    report.results.push_back(evaluate(run.model, ids, make_request(length)));
    const auto& r = report.results.back();
    fmt::print(stderr, "  length {:>6}: ppl {:.3f} over {} tokens\n", length, r.ppl(), r.tokens);
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
  cmd->add_option("--clamp-len", o->clamp_len, "relative: cap distances (default: the run's model.clamp_len)");
  cmd->add_option("--max-tokens", o->max_tokens, "Score at most this many tokens (0 = the whole split)");
  cmd->add_option("--checkpoint", o->checkpoint, "best or last");
  cmd->add_option("--precision", o->precision, "fp32 or bf16");
  cmd->add_option("--threads", o->threads, "Threads (0 = all cores)");
  cmd->add_option("--json", o->json_path, "Also write the results as JSON to this file");
  cmd->callback([o, &exit_code] { exit_code = run_eval(*o); });
}

}  // namespace txl
