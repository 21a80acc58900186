// Probes during training (issue 58): train.probes run on the validation split every
// train.probe_interval steps, so that a probe's metrics can be followed over steps (when a
// model starts to copy, and how far back). train.probes holds what `txl eval` takes as
// --probes and --probe-set, separated by spaces: "copy,passkey copy.distances=16,32", read by
// the same parser (parse_probe_request), with instances drawn with probe seed 1.
//
// A probe run leaves the training as it was: the model is scored in eval mode without
// gradients and put back in training mode, and the generator that dropout draws from is saved
// and restored (as validation does), so a run with probes logs the losses of the same run
// without them, and --resume stays bit for bit either way. Only the root rank probes (the
// others wait at the next collective).
//
// Each probe's result is one line of metrics.jsonl, {"probe": NAME, "step": N, "metrics":
// [{"series": S, "x": X or null, "value": V}, ...], "seconds": T}, and one line on stderr.
// Before training starts the whole plan (each probe's tokens times the probe runs of
// train.max_steps) is checked against train.probe_max_tokens and refused with its figures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/data/corpus.h"
#include "txl/model/transformer.h"
#include "txl/probe/run_probes.h"

namespace txl {

// train.probes read as --probes and --probe-set are: InputError naming train.probes. An
// empty request for "".
ProbeRequest train_probe_request(const TrainConfig& train);

// What the probes of a run will do: each probe resolved and checked on the validation split,
// and the whole run's cost.
struct TrainProbePlan {
  std::vector<PlannedProbe> probes;
  int64_t runs = 0;   // probe runs over train.max_steps (one every train.probe_interval)
  double tokens = 0;  // tokens forwarded by one run of every probe
  double total() const { return tokens * static_cast<double>(runs); }
};

// The plan for `config` on the validation split `valid` (empty without train.probes): InputError
// naming the key for an unknown probe or option, a probe the split cannot hold, and a whole-run
// total past train.probe_max_tokens (with the figures). No model is needed: it is checked before
// one is built. Prints the plan on stderr when `print`.
TrainProbePlan plan_train_probes(const Config& config, const std::vector<int32_t>& valid,
                                 const Vocab& vocab, bool print = false);

// The metrics.jsonl line of one probe's output at `step`.
nlohmann::json train_probe_line(const ProbeOutput& output, int64_t step);

// The probes of one training: due at every train.probe_interval steps; run() scores them on
// the model and returns their metrics lines, leaving the model in training mode and the
// generator as it found them.
class TrainProbes {
 public:
  TrainProbes(const Config& config, const Corpus& corpus);
  bool due(int64_t step) const;
  std::vector<nlohmann::json> run(TransformerLM& model, at::Generator& generator, int64_t step);

 private:
  const Config& config_;
  const Corpus& corpus_;
  TrainProbePlan plan_;
};

}  // namespace txl
