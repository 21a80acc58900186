// One cell of a study: its run directory is trained (started, resumed from its checkpoint,
// or reused when finished), then evaluated with every protocol at every length through the
// run's evaluation cache, and the outcome written to DIR/cells/<name>.json.
//
// Study directory layout:
//   DIR/study.json            the manifest: what a re-run must match (study_manifest)
//   DIR/runs/<cell>/          the cell's run directory (a normal txl run)
//   DIR/cells/<cell>.json     the cell's evaluation: every protocol, length and window sum
//   DIR/cells/<cell>.time.json  its training and evaluation wall times
//   DIR/logs/<cell>.log       the cell's output when it ran as a --jobs child
//   DIR/results.json, DIR/report.md, DIR/plots/   written by the report
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "txl/eval/evaluate.h"
#include "txl/study/study_config.h"

namespace txl {

struct StudyPaths {
  std::string dir;
  std::string manifest() const { return dir + "/study.json"; }
  std::string results() const { return dir + "/results.json"; }
  std::string report() const { return dir + "/report.md"; }
  std::string plots() const { return dir + "/plots"; }
  std::string run_dir(const std::string& cell) const { return dir + "/runs/" + cell; }
  std::string cell_file(const std::string& cell) const { return dir + "/cells/" + cell + ".json"; }
  std::string cell_time(const std::string& cell) const {
    return dir + "/cells/" + cell + ".time.json";
  }
  std::string log(const std::string& cell) const { return dir + "/logs/" + cell + ".log"; }
};

// Where a cell stands before any work.
enum class CellState { kQueued, kPartial, kTrained, kDone };
std::string to_string(CellState state);
CellState cell_state(const StudySpec& spec, const StudyCell& cell, const StudyPaths& paths);

struct CellOutcome {
  bool interrupted = false;
  int signal = 0;
  double train_seconds = 0.0;  // spent training in this call
  double eval_seconds = 0.0;   // spent evaluating in this call
  bool trained = false;        // this call trained (not merely reused)
};

// The request a cell with this config evaluates `protocol` at `length` with.
EvalRequest study_request(const StudyProtocol& protocol, const Config& config, int64_t length);

// Trains and evaluates the cell. A run directory whose config differs from the cell's
// (other than resumable keys) throws InputError naming both. Honours `stop` between steps
// and between evaluations.
CellOutcome run_cell(const StudySpec& spec, const StudyCell& cell, const StudyPaths& paths,
                     const std::atomic<int>* stop);

// A finished cell as the report reads it.
struct CellResults {
  std::string name;
  std::string group;
  int64_t seed = 0;
  std::string encoding;
  int64_t train_length = 0;      // train.tgt_len
  std::string tokenizer;         // data.tokenizer
  double bytes_per_token = 0.0;  // of the evaluated split (0 in cells written before it)
  int64_t steps = 0;
  double train_seconds = 0.0;
  double eval_seconds = 0.0;
  nlohmann::json overrides;
  // [protocol][length]: the result, or nullopt with skipped[protocol][length] saying why.
  std::vector<std::vector<std::optional<EvalResult>>> results;
  std::vector<std::vector<std::string>> skipped;
  // The probes' outputs, as probes_to_json wrote them ({} without probes).
  nlohmann::json probes = nlohmann::json::object();
  // The probes run during training (train.probes), read from the run's metrics.jsonl: one
  // {"probe", "step", "series", "x" (null: none), "value"} per metric and step ([] without).
  nlohmann::json probes_over_steps = nlohmann::json::array();
};

// nullopt when the cell has no (current) DIR/cells/<name>.json.
std::optional<CellResults> read_cell_results(const StudySpec& spec, const StudyCell& cell,
                                             const StudyPaths& paths);

}  // namespace txl
