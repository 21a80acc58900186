#include "txl/cli/eval_options.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/platform/device.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// "nonoverlap | sliding | memory", then each protocol's description and cost (txl protocols).
std::string method_help() {
  std::string out =
      join(eval_protocol_names(), " | ") + " (default " + default_protocol_name() + "):";
  for (const auto& p : eval_protocols())
    out += fmt::format("\n  {}: {} ({})", p.name, p.description, p.cost);
  return out;
}

}  // namespace

// Every protocol's settings as options, from their declarations (protocol.h).
void add_protocol_setting_options(CLI::App* cmd, EvalCliOptions& o) {
  for (const auto& protocol : eval_protocols()) {
    for (const auto& s : protocol.settings) {
      std::optional<int64_t>& value = o.protocol_settings[s.name];  // a map node: stays put
      if (s.is_switch)
        cmd->add_flag_callback(
            s.flag, [&value] { value = 1; }, s.doc);
      else
        cmd->add_option(s.flag, value, s.doc);
    }
  }
}

void add_eval_options(CLI::App* cmd, EvalCliOptions& o, const EvalOptionHelp& help) {
  cmd->add_option("--split", o.split,
                  "valid or test (default: " + help.defaults_from + " eval.split)");
  cmd->add_option("--lengths", o.lengths,
                  "Comma-separated lengths (default: " + help.defaults_from + " eval.lengths)");
  cmd->add_option("--method", o.method, method_help());
  add_protocol_setting_options(cmd, o);
  cmd->add_option("--clamp-len", o.clamp_len,
                  "relative: cap distances, >= 0 (0 = no cap; default: " + help.clamp_from +
                      " model.clamp_len)");
  cmd->add_option("--aid", o.aid,
                  "Extrapolation aid: none | pi | ntk | yarn | dynamic_ntk | dynamic_yarn (rope), "
                  "interpolate (learned_absolute); see txl encodings");
  cmd->add_option("--aid-factor", o.aid_factor,
                  "The aid's scale s >= 1 (default 0: max(1, L / training length))");
  cmd->add_option("--max-tokens", o.max_tokens,
                  "Score at most this many tokens (0 = the whole split)");
  cmd->add_option("--checkpoint", o.checkpoint, "best or last");
  cmd->add_option("--precision", o.precision, "fp32 or bf16");
  cmd->add_option("--threads", o.threads, "Threads, 0 to 1024 (0 = all cores)");
  cmd->add_option("--device", o.device, "cpu, cuda, cuda:N or auto (cuda:0 if there is one)");
  cmd->add_flag("--per-position", o.per_position,
                "Also show mean NLL per position inside the window");
  cmd->add_flag("--no-cache", o.no_cache, help.cache);
  cmd->add_option("--probes", o.probes,
                  "Also run these probes of context use, comma-separated: " + join(probe_names()) +
                      " (txl protocols lists them with their options)");
  cmd->add_option("--probe-set", o.probe_sets,
                  "A probe option, PROBE.KEY=V[,V...] (repeatable), e.g. copy.distances=32,64");
  cmd->add_option("--probe-seed", o.probe_seed,
                  "Seed the probes' instances are drawn with (default 1; recorded in the output)");
  cmd->add_option("--probe-max-tokens", o.probe_max_tokens,
                  "Tokens a probe may forward before it is refused (default 1e9: hours on a CPU)");
  cmd->add_option("--json", o.json_path, help.json);
}

// The settings given on the command line, each checked against its range; a flag that
// only another protocol reads, given with this one, is refused naming both.
ProtocolSettings given_protocol_settings(const EvalCliOptions& o, const std::string& method) {
  ProtocolSettings given;
  for (const auto& p : eval_protocols()) {
    for (const auto& s : p.settings) {
      const auto it = o.protocol_settings.find(s.name);
      if (it == o.protocol_settings.end() || !it->second) continue;
      if (method == p.name) {
        given.set(s.name, *it->second);
        continue;
      }
      throw InputError(std::string(s.flag) + " applies to --method " + p.name +
                       " only, but --method is " + method + "; leave " + s.flag +
                       " out or use --method " + p.name);
    }
  }
  const EvalProtocol& protocol = eval_protocol(method);
  check_setting_ranges(protocol, given, flag_namer(protocol), /*accept_unset=*/false);
  return given;
}

EvalPlan check_eval_options(const EvalCliOptions& o, bool runs_have_aids) {
  EvalPlan c;
  c.settings.protocol = parse_protocol_name(o.method, "--method");
  // Given values must mean what they say; the defaults are asked for by leaving a flag out.
  c.settings.protocol_settings = given_protocol_settings(o, c.settings.protocol);
  c.settings.precision = parse_precision(o.precision, "--precision");
  if (o.clamp_len && *o.clamp_len < 0) {
    throw InputError("--clamp-len " + std::to_string(*o.clamp_len) +
                     " is not valid; expected >= 0 (0 = no cap; leave --clamp-len out for "
                     "the run's model.clamp_len)");
  }
  check_threads(o.threads, "--threads");
  c.settings.aid = parse_extrapolation_aid(o.aid, "--aid");
  const double factor = o.aid_factor.value_or(0.0);
  if (!(factor == 0 || factor >= 1) || !std::isfinite(factor)) {
    throw InputError("--aid-factor " + fmt::format("{:g}", factor) +
                     " is not valid; expected a scale >= 1, or 0 to derive it from the length");
  }
  if (o.aid_factor && c.settings.aid == ExtrapolationAid::kNone && !runs_have_aids) {
    throw InputError("--aid-factor " + fmt::format("{:g}", factor) +
                     " scales an extrapolation aid, but no --aid is given; add --aid NAME "
                     "(txl encodings lists each encoding's aids) or leave --aid-factor out");
  }
  c.settings.aid_factor = factor;
  c.settings.clamp_len = o.clamp_len.value_or(-1);
  c.settings.max_tokens = o.max_tokens;
  parse_checkpoint_choice(o.checkpoint, "--checkpoint");
  if (!o.split.empty()) parse_eval_split(o.split, "--split");
  if (o.max_tokens < 0)
    throw InputError("--max-tokens must be >= 0, got " + std::to_string(o.max_tokens));
  check_output_path(o.json_path, "--json");
  if (o.lengths) c.lengths = parse_lengths(*o.lengths, "--lengths");
  c.split = o.split;
  c.checkpoint = o.checkpoint;
  c.device = resolve_device(o.device, "--device");  // exists on this machine, before any work
  c.read_cache = !o.no_cache;
  c.per_position = o.per_position;
  return c;
}

ProbeRequest check_probe_options(const EvalCliOptions& o, const std::string& aid) {
  if (o.probe_max_tokens && *o.probe_max_tokens < 1)
    throw InputError("--probe-max-tokens " + std::to_string(*o.probe_max_tokens) + " must be >= 1");
  if (o.probe_seed && *o.probe_seed < 0)
    throw InputError("--probe-seed " + std::to_string(*o.probe_seed) + " must be >= 0");
  if (!o.probes) {
    if (!o.probe_sets.empty())
      throw InputError("--probe-set " + o.probe_sets.front() + " needs --probes naming the probe");
    if (o.probe_max_tokens)
      throw InputError("--probe-max-tokens needs --probes naming the probes it limits");
    if (o.probe_seed)
      throw InputError("--probe-seed " + std::to_string(*o.probe_seed) +
                       " seeds the probes, but no --probes is given; add --probes NAMES or "
                       "leave --probe-seed out");
    return {};
  }
  if (!aid.empty()) {
    throw InputError("--probes score the model as trained, without an extrapolation aid, but " +
                     aid +
                     " applies one: the probe results would be shown under an aid they "
                     "never used. Run the probes in an eval or compare without the aid");
  }
  ProbeRequest request =
      parse_probe_request(*o.probes, o.probe_sets, static_cast<uint64_t>(o.probe_seed.value_or(1)));
  if (o.probe_max_tokens) request.max_tokens = double(*o.probe_max_tokens);
  return request;
}

}  // namespace txl
