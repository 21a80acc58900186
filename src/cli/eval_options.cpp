#include "txl/cli/eval_options.h"

#include "txl/eval/evaluate.h"
#include "txl/util/error.h"

namespace txl {

void add_eval_options(CLI::App* cmd, EvalCliOptions& o, const EvalOptionHelp& help) {
  cmd->add_option("--split", o.split,
                  "valid or test (default: " + help.defaults_from + " eval.split)");
  cmd->add_option("--lengths", o.lengths,
                  "Comma-separated lengths (default: " + help.defaults_from + " eval.lengths)");
  cmd->add_option("--method", o.method, "nonoverlap | sliding | memory");
  cmd->add_option("--stride", o.stride, "sliding: window advance (default L/2)");
  cmd->add_option("--mem-len", o.mem_len, "memory: memory length (default: the evaluated length)");
  cmd->add_option("--streams", o.streams,
                  "memory: parallel contiguous streams (default 16; 1 = one stream, slowest)");
  cmd->add_option("--clamp-len", o.clamp_len,
                  "relative: cap distances (default: " + help.clamp_from + " model.clamp_len)");
  cmd->add_option("--max-tokens", o.max_tokens,
                  "Score at most this many tokens (0 = the whole split)");
  cmd->add_option("--checkpoint", o.checkpoint, "best or last");
  cmd->add_option("--precision", o.precision, "fp32 or bf16");
  cmd->add_option("--threads", o.threads, "Threads (0 = all cores)");
  cmd->add_flag("--per-position", o.per_position,
                "Also show mean NLL per position inside the window");
  cmd->add_flag("--no-cache", o.no_cache, help.cache);
  cmd->add_option("--json", o.json_path, help.json);
}

CheckedEvalOptions check_eval_options(const EvalCliOptions& o) {
  CheckedEvalOptions c;
  c.settings.method = parse_eval_method(o.method);
  c.settings.precision = parse_precision(o.precision, "--precision");
  c.settings.stride = o.stride;
  c.settings.mem_len = o.mem_len;
  c.settings.clamp_len = o.clamp_len;
  c.settings.streams = o.streams;
  c.settings.max_tokens = o.max_tokens;
  if (o.checkpoint != "best" && o.checkpoint != "last") {
    throw InputError("--checkpoint \"" + o.checkpoint + "\" is not valid; expected best or last");
  }
  if (!o.split.empty() && o.split != "valid" && o.split != "test") {
    throw InputError("--split \"" + o.split + "\" is not valid; expected valid or test");
  }
  if (o.max_tokens < 0)
    throw InputError("--max-tokens must be >= 0, got " + std::to_string(o.max_tokens));
  check_output_path(o.json_path, "--json");
  if (!o.lengths.empty()) c.lengths = parse_lengths(o.lengths, "--lengths");
  return c;
}

}  // namespace txl
