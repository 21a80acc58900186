#include "txl/cli/eval_shards.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/cache.h"
#include "txl/platform/runtime.h"
#include "txl/probe/assessment.h"
#include "txl/probe/probe_shard_file.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// What a shard may be given: what picks the run, the split and the probes, and how the
// model runs. The rest shapes the perplexity table, which a shard does not compute.
const std::vector<std::string>& shard_options() {
  static const std::vector<std::string> options = {
      "--run",     "--split",  "--lengths", "--checkpoint",       "--precision",
      "--threads", "--device", "--probes",  "--probe-set",        "--probe-seed",
      "--aid",     "--json",   "--shard",   "--probe-max-tokens", "--help"};
  return options;
}

// Which weights and data were scored: what every shard of one merge must share.
nlohmann::json run_identity(const LoadedEval& loaded, const EvalPlan& plan,
                            const std::string& run_dir) {
  const std::string split = plan.split.empty() ? loaded.run.config.eval.split : plan.split;
  auto identity = subject_to_json(identify_subject(loaded.run, plan.checkpoint, split, loaded.ids));
  identity["dir"] = run_dir;
  return identity;
}

// What changes the probes' numbers beside their options: the evaluated lengths (the passkey's
// and attention's defaults), the precision, the windows per pass (eval.batch_tokens).
nlohmann::json shard_settings(const LoadedEval& loaded, const EvalPlan& plan) {
  return {{"lengths", loaded.lengths},
          {"precision", to_string(plan.settings.precision)},
          {"batch_tokens", loaded.run.config.eval.batch_tokens}};
}

}  // namespace

int run_probe_shard(const EvalCliOptions& o, const std::string& run_dir, const std::string& text,
                    const std::vector<std::string>& given) {
  const ProbeShard shard = parse_probe_shard(text, "--shard");
  for (const auto& name : given) {
    if (!contains(shard_options(), name))
      throw InputError(name + " shapes the perplexity table, which --shard " + text +
                       " does not compute (a shard scores only its block of the probes); leave " +
                       name + " out, or run txl eval without --shard for perplexity");
  }
  if (!o.probes)
    throw InputError("--shard " + text +
                     " splits the probes across processes, but no --probes is given; add "
                     "--probes NAMES (perplexity is not sharded: txl eval without --shard)");
  if (o.json_path.empty())
    throw InputError("--shard " + text +
                     " needs --json FILE: a shard's partial results are read by txl eval --merge");
  const EvalPlan plan = check_eval_options(o);
  const ProbeRequest request =
      check_probe_options(o, plan.settings.aid == ExtrapolationAid::kNone ? "" : "--aid " + o.aid);
  set_threads(o.threads);
  // The probes alone: the run and split loaded, no length evaluated.
  PreparedEval prepared(RunEvalOptions{plan, run_dir}, /*check_lengths=*/false);
  const LoadedEval loaded = prepared.loaded();
  const ProbeSubject subject = probe_subject(loaded, plan.settings.precision);
  const auto planned = plan_probes(request, subject, "--probes");
  prepared.commit();
  const auto partials = score_probes(planned, subject, "shard " + to_string(shard) + " ", shard);
  const nlohmann::json file = shard_file_json(shard, run_identity(loaded, plan, run_dir),
                                              shard_settings(loaded, plan), partials);
  fmt::print(
      "run {}: shard {} of the probes {} scored, for txl eval --merge with the other shards.\n"
      "No perplexity table: a shard scores only its block of the probes' windows (txl eval "
      "without --shard computes perplexity).\n",
      run_dir, to_string(shard), join(request.names, ", "));
  write_json_output(o.json_path, file);
  return 0;
}

int run_probe_merge(const std::vector<std::string>& files, const std::string& json_path,
                    const std::vector<std::string>& given) {
  for (const auto& name : given) {
    if (name != "--merge" && name != "--json")
      throw InputError(name +
                       " is not taken with --merge: the shard files say what was run, "
                       "how, and on which run; give --merge FILES and --json OUT only");
  }
  check_output_path(json_path, "--json");
  for (const auto& f : files) {
    if (!json_path.empty() && same_file_key(f) == same_file_key(json_path))
      throw InputError("--json " + json_path +
                       " is one of the --merge files; write the merge "
                       "to another file");
  }
  std::vector<ShardFile> shards;
  for (const auto& f : files) shards.push_back(read_shard_file(f));
  const MergedProbes merged = merge_probe_shards(shards);
  fmt::print("run {} | {} split | {} step {} | probes merged from {} shards\n",
             merged.run.at("dir").get<std::string>(), merged.run.at("split").get<std::string>(),
             merged.run.at("checkpoint").get<std::string>(),
             merged.run.at("checkpoint_step").get<int64_t>(), files.size());
  fmt::print("{}", format_probe_outputs(merged.outputs));
  if (!json_path.empty()) {
    nlohmann::json files_json = files;
    write_json_output(json_path, {{"run", merged.run},
                                  {"settings", merged.settings},
                                  {"merged_from", files_json},
                                  {"probes", probes_to_json(merged.outputs)}});
  }
  return 0;
}

}  // namespace txl
