// txl eval --run DIR [--split valid|test | --text FILE...] [--lengths 64,128] [--method M]
//          [--json FILE] ...
//          --run DIR --probes P --shard K/N --json FILE | --merge FILES [--json FILE]
#include <spdlog/fmt/fmt.h>

#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/eval_options.h"
#include "txl/cli/eval_shards.h"
#include "txl/cli/output_path.h"
#include "txl/eval/per_token.h"
#include "txl/eval/text_documents.h"
#include "txl/platform/runtime.h"
#include "txl/probe/assessment.h"
#include "txl/probe/run_probes.h"
#include "txl/util/error.h"

namespace txl {

namespace {

struct EvalCommandOptions : EvalCliOptions {
  std::string run_dir;
  std::optional<std::string> shard;  // --shard K/N: the probes' shard K of N (eval_shards.h)
  std::vector<std::string> merge;    // --merge FILES: shard files to merge
  std::vector<std::string> texts;    // --text FILE...: files to score instead of a split
  std::string per_token;             // --per-token FILE.tsv|.jsonl
};

// --text as eval takes it: the checks compare shares, and no --shard (a shard file names the
// run's split, which is what --merge checks the shards against).
void check_eval_text_options(const EvalCommandOptions& o) {
  check_text_options(o.texts, o.split);
  if (!o.texts.empty() && o.shard)
    throw InputError("--shard " + *o.shard +
                     " scores the probes on the run's split; with --text the probes run in one "
                     "process (leave --shard out)");
}

void print_unknown_notes(const EvalReport& report, const EncodeStats& stats) {
  if (report.documents.empty()) {
    if (stats.unknown > 0) {
      fmt::print(
          "note: {} of {} tokens in {} are not in the run's vocabulary and were scored as "
          "<unk>\n",
          stats.unknown, stats.tokens, report.split);
    }
    return;
  }
  for (const auto& d : report.documents)
    fmt::print(stderr, "{}", unknown_warning(d.file, d.tokens, d.unknown));
}

// `given`: the option names on the command line (what --shard and --merge refuse).
int run_eval(const EvalCommandOptions& o, const std::vector<std::string>& given) {
  if (!o.merge.empty()) return run_probe_merge(o.merge, o.json_path, given);
  if (o.run_dir.empty())
    throw InputError(
        "txl eval needs --run DIR (the run to evaluate), or --merge FILES (probe "
        "shard files to merge)");
  check_eval_text_options(o);
  if (o.shard) return run_probe_shard(o, o.run_dir, *o.shard, given);
  // Every option before any work, so bad input writes nothing.
  EvalPlan plan = check_eval_options(o);
  plan.texts = o.texts;
  if (!o.per_token.empty()) {
    check_per_token_path(o.per_token);
    check_output_path(o.per_token, "--per-token");
    plan.per_token = o.per_token;
  }
  const ProbeRequest probe_request =
      check_probe_options(o, plan.settings.aid == ExtrapolationAid::kNone ? "" : "--aid " + o.aid);
  set_threads(o.threads);
  const auto [outcome, probes] = assess_run(RunEvalOptions{plan, o.run_dir}, probe_request);
  const auto& [report, stats] = outcome;

  fmt::print("{}", format_report_table(report));
  fmt::print("{}", format_probe_outputs(probes));
  print_unknown_notes(report, stats);
  if (!o.json_path.empty()) {
    auto json = report_to_json(report);
    if (!probes.empty()) json["probes"] = probes_to_json(probes);
    write_json_output(o.json_path, json);
  }
  return 0;
}

}  // namespace

void setup_eval(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EvalCommandOptions>();
  auto* cmd = app.add_subcommand("eval", "Perplexity of a trained run at several sequence lengths");
  cmd->add_option("--run", o->run_dir,
                  "Run directory written by txl train (required, but with --merge)");
  add_eval_options(cmd, *o,
                   {"the run's", "the run's",
                    "Evaluate again even when RUN/eval-cache holds the result (and refresh it)",
                    "Also write the results as JSON to this file"});
  cmd->add_option("--text", o->texts,
                  "Score these files instead of a split (each on its own, and the total), read "
                  "with the run's tokenizer; - is standard input. --probes build their "
                  "instances from the files joined in order");
  cmd->add_option(
      "--per-token", o->per_token,
      "FILE.tsv or FILE.jsonl: one row per scored token (length, document, index, token, id, "
      "nll, bits, context, unk, word_index, word, word_nll), in text order; word_nll (the word's "
      "summed NLL) on its last token only; evaluates without the cache");
  cmd->add_option("--shard", o->shard,
                  "K/N: score only shard K of N of the probes' windows (0 <= K < N <= 4096) and "
                  "write them with --json for --merge; no perplexity table");
  cmd->add_option("--merge", o->merge,
                  "Shard files (--shard K/N --json FILE), every shard once: print and write "
                  "(--json) the probes as one process would");
  cmd->callback([o, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    std::vector<std::string> given;
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) given.push_back(option->get_name());
    }
    if (!o->merge.empty() && !o->run_dir.empty())
      throw InputError("--merge takes the shard files' run; leave --run " + o->run_dir + " out");
    exit_code = run_eval(*o, given);
  });
}

}  // namespace txl
