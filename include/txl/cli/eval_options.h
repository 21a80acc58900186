// The options `txl eval` and `txl compare` share (what to score and how), their registration
// on a subcommand, and the checks that need no run directory.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "txl/cli/options.h"
#include "txl/cli/output_path.h"
#include "txl/eval/request.h"
#include "txl/eval/run_eval.h"
#include "txl/probe/probe.h"

namespace txl {

struct EvalCliOptions {
  std::string split;                   // empty: the run's eval.split
  std::optional<std::string> lengths;  // unset: the run's eval.lengths ("" is refused)
  std::string method = default_protocol_name();
  std::string checkpoint = "best";
  std::string precision = "fp32";
  std::string device = "cpu";
  std::string json_path;
  // Unset: the default (the run's model.clamp_len, a protocol's default). Optional so that
  // no number given on the command line can stand for "the default" by accident. A flag
  // that applies to one method only (a protocol's setting) or with an aid only
  // (--aid-factor) is refused with another, not silently ignored.
  // The protocols' settings given, by setting name (a switch given: 1); registered from the
  // protocols' declarations (protocol.h).
  std::map<std::string, std::optional<int64_t>> protocol_settings;
  std::optional<int64_t> clamp_len;
  std::string aid = "none";          // extrapolation aid (config/encodings.h)
  std::optional<double> aid_factor;  // unset or 0: derived from the length and training length
  int64_t max_tokens = 0;
  int64_t threads = 0;
  bool per_position = false;
  bool no_cache = false;
  // Probes of context use (probe/probe.h): names, PROBE.KEY=VALUES settings, the seed their
  // instances are drawn with.
  std::optional<std::string> probes;
  std::vector<std::string> probe_sets;
  std::optional<int64_t> probe_seed;        // absent: 1
  std::optional<int64_t> probe_max_tokens;  // absent: kProbeTokenCeiling
};

// How the help texts name the defaults' source: eval says "the run's", compare "the first
// run's" (split, lengths, cache) and "each run's" (clamp_len).
struct EvalOptionHelp {
  std::string defaults_from;  // split, lengths
  std::string clamp_from;     // clamp_len
  std::string cache;          // --no-cache
  std::string json;           // --json
};

// Every protocol's settings as options (--stride, --mem-len, ...), from their declarations
// (protocol.h), into o.protocol_settings; and those given, checked for `method` (a flag that
// only another protocol reads is refused naming both).
void add_protocol_setting_options(CLI::App* cmd, EvalCliOptions& o);
ProtocolSettings given_protocol_settings(const EvalCliOptions& o, const std::string& method);

// Registers every EvalCliOptions field on `cmd` (all but --json first, then --json).
void add_eval_options(CLI::App* cmd, EvalCliOptions& o, const EvalOptionHelp& help);

// The options as an evaluation plan, after checking every one that needs no run: InputError
// naming the option otherwise, before any work, so bad input writes nothing. `runs_have_aids`:
// compare's DIR@aid arguments take --aid-factor too, so it may come without --aid there.
EvalPlan check_eval_options(const EvalCliOptions& o, bool runs_have_aids = false);

// --probes, --probe-set and --probe-seed as a request (no probes without --probes; a
// --probe-set or --probe-seed without it is refused). InputError naming the flag.
// `aid`: the extrapolation aid an evaluated run is given ("--aid yarn", "run runs/r@yarn"),
// empty for none: the probes score the model without it, so --probes beside one is refused.
ProbeRequest check_probe_options(const EvalCliOptions& o, const std::string& aid = "");

}  // namespace txl
