// A run's metrics.jsonl read back (train/metrics_log.h writes it): the training progress
// lines, the validations and the probe results over steps, for `txl plot` and a study's
// report.
//
// Lines and what is read from them:
//   {"step", "loss", "tokens_seen", ...}            progress (a null loss: every step of the
//                                                   interval skipped; kept as NaN)
//   {"step", "valid_ppl", ...}                      a validation
//   {"probe", "step", "metrics": [{"series", "x", "value"}, ...]}   a probe's result ("x" a
//                                                   number or null; an "x_name" is read too)
// Other objects with a "step" (a skipped step's {"nonfinite": true}) are passed over.
//
// A resumed run appends to the same file, and one resumed without truncate_metrics (or
// killed between a log line and its checkpoint) repeats steps: a line whose step is at or
// below the last one of its kind (progress, validation, each probe) starts the run again at
// that step, and every point read at or after it is dropped. So a resumed run reads as one
// line, its latest attempt at each step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace txl {

struct ProgressPoint {
  int64_t step = 0;
  double loss = 0;           // NaN where the file has null
  int64_t tokens_seen = -1;  // -1: not in the line
};

struct ValidationPoint {
  int64_t step = 0;
  double ppl = 0;
};

struct ProbePoint {
  std::string probe;  // "copy"
  int64_t step = 0;
  std::string series;       // "copy_gain"
  std::optional<double> x;  // a distance, a layer; none for a single number
  std::string x_name;       // what x is ("d", "layer") when the line says, else ""
  double value = 0;
};

struct RunMetrics {
  std::string path;  // the metrics.jsonl read
  std::vector<ProgressPoint> progress;
  std::vector<ValidationPoint> validations;
  std::vector<ProbePoint> probes;
  int64_t lines = 0;  // non-empty lines read
};

enum class MetricsReading {
  // Every line must be an object of the shapes above: InputError "FILE:LINE: ..." otherwise.
  // Only an unterminated last line (a kill -9 mid-write) is passed over, with `warning` set.
  kStrict,
  // Lines that do not parse or have the wrong shape are passed over (a study's report reads
  // whatever its cells logged).
  kLenient,
};

// Reads `path`. A missing file, a directory, a FIFO: InputError naming it (kStrict), an empty
// RunMetrics (kLenient). `warning` (when not null) receives a line for the user, or "".
RunMetrics read_run_metrics(const std::string& path, MetricsReading mode,
                            std::string* warning = nullptr);

// The tokens seen by `step`: the progress line's tokens_seen at that step, else linear
// between the progress lines around it (beyond the last, at the last interval's rate).
// nullopt when no progress line carries tokens_seen.
std::optional<int64_t> tokens_at(const RunMetrics& metrics, int64_t step);

}  // namespace txl
