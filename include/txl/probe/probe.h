// Probes: does the model use its context? Beside perplexity (an evaluation protocol,
// eval/protocol.h), a probe measures one way a model does or does not use what lies far
// back: RECL, copy distance, teacher-forced passkey, attention statistics.
//
// Probes are a sibling of the evaluation protocols, not protocols themselves: a protocol's
// result is one NLL sum per window, which intervals, paired differences and the cache are
// built on; a probe's result is a table of its own shape (copy gain against distance, a
// length x depth grid, per-layer-and-head statistics, or, for RECL, a number that exists only
// over a group of models). What they share is this registry: a probe is one file
// (src/probe/probes/<name>.cpp) plus one registry line, and declares its name, description,
// cost, options (each with its one range rule) and how it runs. Its result is a JSON detail
// plus flat metrics (series, x, value), which every consumer reads the same way: `txl eval`
// prints them, `txl compare` puts runs side by side, `txl study` takes seed-level intervals
// per group, and the report draws one plot per series family.
//
// Instances are built from the evaluated split with a fixed seed (ProbeValues::seed, stated
// in every output), so two runs and two machines score the same instances, and so that
// several processes can each score a block of them (txl eval --shard K/N, probe_shard.h):
// a probe scores a shard into a partial result and finishes from the shards' partials.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/model/transformer.h"
#include "txl/probe/probe_shard.h"

namespace txl {

// One run as a probe sees it: the model (in eval mode for the call), the evaluated split.
struct ProbeSubject {
  TransformerLM* model = nullptr;
  const std::vector<int32_t>* ids = nullptr;  // the split as one token stream
  const Vocab* vocab = nullptr;
  const Config* config = nullptr;  // the run's config (tokenizer, training length)
  std::vector<int64_t> lengths;    // the evaluated lengths (eval --lengths, study lengths)
  Precision precision = Precision::kFp32;
};

// A probe option: a list of numbers (a single number is a list of one).
struct ProbeOptionSpec {
  const char* key;  // e.g. "distances"
  double min, max;  // inclusive range of every value
  bool integer;     // whole numbers only
  bool list;        // more than one value allowed
  const char* doc;  // help text, with the default
};

// The options a probe runs with: every key of its specs, defaults filled in.
struct ProbeValues {
  uint64_t seed = 1;
  std::map<std::string, std::vector<double>> values;
  int64_t integer(const std::string& key) const;  // the first value
  double number(const std::string& key) const;
  std::vector<int64_t> integers(const std::string& key) const;
  const std::vector<double>& numbers(const std::string& key) const;
};

// One number a probe reports: `series` names what is measured ("copy gain (nats/token)"),
// `x` where (d = 128), with an optional interval over the probe's own instances.
// A metric may also be a cell of a two-dimensional grid (the passkey's length x depth): then
// `grid` names the grid, `x` is its column and `grid_y` its row, and reports draw the grid as
// a heatmap beside the table.
struct ProbeMetric {
  ProbeMetric() = default;
  ProbeMetric(std::string series_, std::string x_name_, double x_, double value_)
      : series(std::move(series_)), x_name(std::move(x_name_)), x(x_), value(value_) {}

  std::string series;
  std::string x_name;  // "d", "length", ...
  double x = 0.0;
  double value = 0.0;
  bool has_interval = false;
  double lo = 0.0, hi = 0.0;
  std::string grid;    // "" = not part of a grid
  std::string y_name;  // the grid's row coordinate ("depth")
  double grid_y = 0.0;
  bool in_table = true;  // false: drawn only (a grid too large for a table)
};

struct ProbeRun {
  nlohmann::json detail;  // everything the probe measured (instances' seed, counts, tables)
  std::vector<ProbeMetric> metrics;
};

using ProbeProgressFn = std::function<void(double fraction)>;

// What a probe holds and forwards at its largest, from its options alone (nothing built):
// the bytes of the instances it has in memory at once, and the longest windows it scores,
// `windows` of `window` tokens. The memory check adds the forward pass evaluation would
// make over those windows (eval_footprint.h).
struct ProbeWorkload {
  double instance_bytes = 0;
  int64_t window = 0;
  int64_t windows = 0;
  double tokens = 0;  // tokens forwarded in all (the probe's cost formula, evaluated)
};

// The most tokens a probe plan forwards unless asked for more (--probe-max-tokens, a study's
// probes.max_tokens): 10^9 tokens take hours on a CPU.
inline constexpr double kProbeTokenCeiling = 1e9;

struct Probe {
  const char* name;         // --probes value
  const char* description;  // one sentence: what it measures
  const char* cost;         // tokens forwarded, in terms of its options
  std::vector<ProbeOptionSpec> options;
  // Defaults that depend on the run (its training length, the evaluated lengths).
  ProbeValues (*defaults)(const ProbeSubject& subject);
  // Checks that need the subject (a length past the split, a grid that cannot fit):
  // InputError naming the option, before any probe runs.
  void (*check)(const ProbeSubject& subject, const ProbeValues& values);
  // Its largest workload, for the memory check made before `check` (which may build
  // instances): refused with the figures when it does not fit the available memory.
  ProbeWorkload (*workload)(const ProbeSubject& subject, const ProbeValues& values);
  // Scores shard `shard`'s block of the probe's windows (probe_shard.h; one process: shard 0
  // of 1) into a partial result: what `finish` needs of them, as JSON a shard file carries.
  nlohmann::json (*score)(const ProbeSubject& subject, const ProbeValues& values,
                          const ProbeShard& shard, const ProbeProgressFn& progress);
  // The result from every shard's partial, in shard order (one process: its one partial), so
  // that one process and a merge of shards go through the same code. InputError when the
  // partials do not cover every window exactly once.
  ProbeRun (*finish)(const std::vector<nlohmann::json>& partials, const ProbeValues& values);
  // A probe defined over a group of models (RECL): from the members' details, each member's
  // group metrics. nullptr for a probe of one model.
  std::vector<std::vector<ProbeMetric>> (*group)(const std::vector<nlohmann::json>& details,
                                                 const ProbeValues& values);
};

const std::vector<Probe>& probe_registry();

// A probe's options made ready to score `subject` (every probe's options hold `scoring` and
// `progress`): the run's eval.batch_tokens, the subject's precision, and `progress`.
template <class Options>
Options scored_on(Options options, const ProbeSubject& subject, const ProbeProgressFn& progress) {
  options.scoring.batch_tokens = subject.config->eval.batch_tokens;
  options.scoring.precision = subject.precision;
  options.progress = progress;
  return options;
}

// Shared by the probes' entries (src/probe/probes/):
// The evaluated lengths a probe defaults to: those the run's encoding can take, as eval
// decides per length (a length past a learned table is n/a there, so no default here), or
// every one when it can take none (the probe's check then refuses, naming its option).
std::vector<int64_t> default_lengths(const ProbeSubject& subject);
// The largest of default_lengths (the run's training length when there are none).
int64_t longest_length(const ProbeSubject& subject);
// An InputError when a window of `window` tokens is past the positions the run's encoding
// can take (a learned table), naming the probe option that asks for it.
void check_window_fits(const ProbeSubject& subject, int64_t window, const std::string& option);
// The registered probe `name`; InputError naming key_path otherwise. string_view parameters:
// the result refers to the registry, never to an argument (GCC 14's -Wdangling-reference
// would suspect a temporary std::string).
const Probe& find_probe(std::string_view name, std::string_view key_path);
std::vector<std::string> probe_names();

// What a user asked for: probe names and "probe.key=v1,v2" settings (the CLI), or a study's
// {"copy": {"distances": [...]}, ...}.
struct ProbeRequest {
  std::vector<std::string> names;
  std::map<std::string, std::map<std::string, std::vector<double>>> settings;  // probe -> key
  uint64_t seed = 1;
  double max_tokens = kProbeTokenCeiling;  // a probe forwarding more is refused
};

// --probes "copy,passkey" and --probe-set "copy.distances=32,64" (repeatable): InputError
// naming the flag and the bad part. `names_flag` and `sets_flag` are what messages call
// them (train.probes holds both: train/train_probes.h).
ProbeRequest parse_probe_request(const std::string& names, const std::vector<std::string>& sets,
                                 uint64_t seed, const std::string& names_flag = "--probes",
                                 const std::string& sets_flag = "--probe-set");
// A study's "probes" object: InputError naming `where` and the key.
ProbeRequest probe_request_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const ProbeRequest& request);

// The values one probe runs with on one subject: defaults, then the request's settings, each
// checked against its spec; then the probe's own check.
ProbeValues resolve_probe_values(const Probe& probe, const ProbeRequest& request,
                                 const ProbeSubject& subject, const std::string& where);

nlohmann::json to_json(const ProbeMetric& metric);
ProbeMetric metric_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ProbeValues& values);
ProbeValues probe_values_from_json(const nlohmann::json& j);

// The metrics of one run as a text table, one row per (series, x).
std::string format_probe_metrics(const std::string& probe, const std::vector<ProbeMetric>& metrics);

}  // namespace txl
