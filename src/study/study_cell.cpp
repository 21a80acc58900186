#include "txl/study/study_cell.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "txl/config/config_diff.h"
#include "txl/data/corpus.h"
#include "txl/eval/cache.h"
#include "txl/eval/progress.h"
#include "txl/eval/protocol.h"
#include "txl/eval/run_metrics.h"
#include "txl/platform/runtime.h"
#include "txl/probe/assessment.h"
#include "txl/run/checkpoint.h"
#include "txl/run/run_dir.h"
#include "txl/train/resume.h"
#include "txl/train/trainer.h"
#include "txl/util/clock.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The cell's config as a run directory records it, for comparisons that ignore the keys a
// resume may change (threads among them).
std::vector<std::string> config_changes(const json& saved, const Config& cell) {
  return config_differences(saved, config_to_json(cell), resumable_keys());
}

std::optional<json> read_json_if_any(const std::string& path) {
  if (!is_regular_file(path)) return std::nullopt;
  try {
    return read_json_file(path);
  } catch (const InputError&) {
    return std::nullopt;  // a damaged file counts as absent: the cell is evaluated again
  }
}

// The cell file is current when it describes this cell's config and the study's evaluation
// block (split, checkpoint, lengths and protocols all follow from it).
// A file whose digest does not match (edited or damaged) is not current: the cell is
// evaluated again (run_cell says so), through the run's evaluation cache.
bool cell_file_current(const json& j, const StudySpec& spec, const StudyCell& cell) {
  return digest_matches(j) && j.contains("config") &&
         config_changes(j["config"], cell.config).empty() &&
         j.value("eval", json()) == study_eval_json(spec.eval);
}

// DIR/cells/<cell>.time.json: {"train_s": training seconds summed over the calls that
// trained, "eval_s": seconds of the last evaluation that computed anything (one that found
// every result in the cache keeps the time of the one that computed them).
json saved_times(const StudyPaths& paths, const std::string& cell) {
  const auto j = read_json_if_any(paths.cell_time(cell));
  return j && j->is_object() ? *j : json::object();
}

void save_times(const StudyPaths& paths, const std::string& cell, double train_add,
                std::optional<double> eval_seconds) {
  json j = saved_times(paths, cell);
  j["train_s"] = j.value("train_s", 0.0) + train_add;
  if (eval_seconds) j["eval_s"] = *eval_seconds;
  if (!j.contains("eval_s")) j["eval_s"] = 0.0;
  write_file_atomic(paths.cell_time(cell), j.dump() + "\n");
}

// Why this cell cannot be evaluated with the protocol at this length ("" when it can).
// Trains the cell's run directory until train.max_steps; false when a signal stopped it.
bool train_cell(const StudyCell& cell, const StudyPaths& paths, const std::atomic<int>* stop,
                CellOutcome& outcome) {
  const std::string dir = paths.run_dir(cell.name);
  const RunPaths run{dir};
  std::optional<RunLock> lock;
  if (is_directory(dir)) lock.emplace(dir);
  TrainOptions options;
  options.run_dir = dir;
  options.stop_signal = stop;
  if (is_regular_file(run.last_checkpoint())) {
    const auto saved = read_json_file(run.config());
    const auto changes = config_changes(saved, cell.config);
    if (!changes.empty()) {
      throw InputError(dir + " holds a run with another configuration than the cell " + cell.name +
                       " (run vs study: " + join(changes, "; ") +
                       "); move it away or use another --out");
    }
    const auto state = read_checkpoint_state(run.last_checkpoint());
    if (state.step >= cell.config.train.max_steps) return true;
    remove_stale_temporaries(dir);
    options.resume = true;
    fmt::print(stderr, "[study] {}: resuming at step {} of {}\n", cell.name, state.step,
               cell.config.train.max_steps);
  }
  Corpus corpus = load_training_data(cell.config);
  // Without a checkpoint nothing can be resumed: what an earlier attempt wrote before its
  // first checkpoint is replaced.
  if (!options.resume) prepare_run_dir(dir, /*force=*/true);
  if (!lock) lock.emplace(dir);
  const auto start = Clock::now();
  const TrainSummary summary = train_model(cell.config, options, std::move(corpus));
  outcome.train_seconds = seconds_since(start);
  outcome.trained = true;
  save_times(paths, cell.name, outcome.train_seconds, std::nullopt);
  if (summary.interrupted) {
    outcome.interrupted = true;
    outcome.signal = summary.stop_signal;
    return false;
  }
  return true;
}

// One protocol's result at one length, as the cell file holds it.
struct LengthResult {
  json j;                 // the result, or {"length", "skipped": why the cell has none}
  bool computed = false;  // evaluated now, not found in the cache
};

LengthResult evaluate_length(const StudyCell& cell, const LoadedRun& run,
                             CachedEvaluator& evaluator, const StudyProtocol& protocol,
                             int64_t length) {
  const auto request = study_request(protocol, run.config, length);
  // n/a with the reason, like eval and compare; check_cells_can_train refused the rest.
  const std::string reason = request_unavailable(run.config.model, request);
  if (!reason.empty()) return {json{{"length", length}, {"skipped", reason}}};
  bool cached = false;
  EvalProgressPrinter progress(
      fmt::format("[study] {} {} L={}", cell.name, protocol.label, length));
  const EvalResult r = evaluator.evaluate(request, &cached, progress.callback());
  fmt::print(stderr, "[study] {} {} L={}: ppl {:.3f} over {} tokens{}\n", cell.name, protocol.label,
             length, r.ppl(), r.tokens, cached ? " (cached)" : "");
  return {result_to_json(r), !cached};
}

// DIR/cells/<cell>.json: what the cell is, what it was evaluated with, every result and the
// times saved so far.
void write_cell_file(const StudySpec& spec, const StudyCell& cell, const StudyPaths& paths,
                     const LoadedRun& run, const EncodeStats& split_stats, const json& protocols,
                     const json& probes) {
  const json times = saved_times(paths, cell.name);
  const json j = {
      {"name", cell.name},
      {"group", cell.group},
      {"seed", cell.seed},
      {"overrides", cell.overrides},
      {"config", config_to_json(cell.config)},
      {"run_dir", paths.run_dir(cell.name)},
      {"checkpoint_step", run.state.step},
      {"bytes_per_token", bytes_per_token(split_stats)},
      {"eval", study_eval_json(spec.eval)},
      {"protocols", protocols},
      {"probes", probes},
      {"timing",
       {{"train_s", times.value("train_s", 0.0)}, {"eval_s", times.value("eval_s", 0.0)}}}};
  write_file_atomic(paths.cell_file(cell.name), with_digest(j).dump() + "\n");
}

}  // namespace

EvalRequest study_request(const StudyProtocol& protocol, const Config& config, int64_t length) {
  return make_eval_request(protocol.settings, length, config.eval.batch_tokens,
                           training_length(config));
}

std::string to_string(CellState state) {
  switch (state) {
    case CellState::kQueued:
      return "queued";
    case CellState::kPartial:
      return "partly trained";
    case CellState::kTrained:
      return "trained";
    case CellState::kDone:
      return "done";
  }
  return "?";
}

CellState cell_state(const StudySpec& spec, const StudyCell& cell, const StudyPaths& paths) {
  const auto file = read_json_if_any(paths.cell_file(cell.name));
  if (file && cell_file_current(*file, spec, cell)) return CellState::kDone;
  const RunPaths run{paths.run_dir(cell.name)};
  if (!is_regular_file(run.last_checkpoint())) return CellState::kQueued;
  try {
    const auto state = read_checkpoint_state(run.last_checkpoint());
    return state.step >= cell.config.train.max_steps ? CellState::kTrained : CellState::kPartial;
  } catch (const InputError&) {
    return CellState::kPartial;  // run_cell reports what is wrong with it
  }
}

CellOutcome run_cell(const StudySpec& spec, const StudyCell& cell, const StudyPaths& paths,
                     const std::atomic<int>* stop) {
  CellOutcome outcome;
  if (cell_state(spec, cell, paths) == CellState::kDone) return outcome;
  fs::create_directories(paths.dir + "/runs");
  fs::create_directories(paths.dir + "/cells");
  if (!train_cell(cell, paths, stop, outcome)) return outcome;
  const auto old_file = read_json_if_any(paths.cell_file(cell.name));
  if (is_regular_file(paths.cell_file(cell.name)) && (!old_file || !digest_matches(*old_file))) {
    const bool has_digest = old_file && old_file->is_object() && old_file->contains("digest");
    fmt::print(stderr, "warning: {}: {}; evaluating the cell again\n", paths.cell_file(cell.name),
               has_digest ? "edited or damaged (its digest does not match its content)"
                          : "damaged, or written by an earlier txl (it has no digest)");
  }

  // Evaluate every protocol at every length, through the run's cache.
  const auto start = Clock::now();
  const std::string dir = paths.run_dir(cell.name);
  RunLock lock(dir);
  LoadedRun run = load_run(dir, spec.eval.checkpoint);
  EncodeStats split_stats;
  const auto ids = load_split(run.config.data.dir, spec.eval.split, run.vocab, &split_stats);
  set_threads(cell.config.train.threads);
  CachedEvaluator evaluator(run, spec.eval.checkpoint, spec.eval.split, ids, /*read_cache=*/true);
  json protocols = json::array();
  bool computed = false;  // some result was not in the cache
  for (const auto& protocol : spec.protocols) {
    json results = json::array();
    for (const int64_t length : spec.eval.lengths) {
      if (stop && stop->load() != 0) {
        outcome.interrupted = true;
        outcome.signal = stop->load();
        return outcome;
      }
      LengthResult r = evaluate_length(cell, run, evaluator, protocol, length);
      computed = computed || r.computed;
      results.push_back(std::move(r.j));
    }
    protocols.push_back({{"label", protocol.label}, {"results", results}});
  }
  json probes = json::object();
  if (!spec.eval.probes.names.empty()) {
    const LoadedEval loaded{run, ids, spec.eval.lengths};
    probes = probes_to_json(probe_loaded_run(loaded, Precision::kFp32, spec.eval.probes,
                                             spec.source + ": eval.probes",
                                             "[study] " + cell.name + " "));
    computed = true;
  }
  outcome.eval_seconds = seconds_since(start);
  save_times(paths, cell.name, 0.0,
             computed ? std::optional<double>(outcome.eval_seconds) : std::nullopt);
  write_cell_file(spec, cell, paths, run, split_stats, protocols, probes);
  return outcome;
}

namespace {

// The probe lines of a run's metrics.jsonl (train.probes), flat: what a cell's results carry.
json probes_over_steps(const std::string& run_dir) {
  json rows = json::array();
  const RunMetrics m =
      read_run_metrics(RunPaths{run_dir}.metrics(), MetricsReading::kLenient, nullptr);
  for (const auto& p : m.probes) {
    rows.push_back({{"probe", p.probe},
                    {"step", p.step},
                    {"series", p.series},
                    {"x", p.x ? json(*p.x) : json(nullptr)},
                    {"value", p.value}});
  }
  return rows;
}

}  // namespace

std::optional<CellResults> read_cell_results(const StudySpec& spec, const StudyCell& cell,
                                             const StudyPaths& paths) {
  const auto j = read_json_if_any(paths.cell_file(cell.name));
  if (!j || !cell_file_current(*j, spec, cell)) return std::nullopt;
  CellResults c;
  c.name = cell.name;
  c.group = cell.group;
  c.seed = cell.seed;
  c.encoding = to_string(cell.config.model.pos_encoding);
  c.train_length = cell.config.train.tgt_len;
  c.tokenizer = to_string(cell.config.data.tokenizer);
  c.bytes_per_token = j->value("bytes_per_token", 0.0);
  c.steps = j->value("checkpoint_step", int64_t{0});
  c.train_seconds = (*j)["timing"].value("train_s", 0.0);
  c.eval_seconds = (*j)["timing"].value("eval_s", 0.0);
  c.overrides = (*j)["overrides"];
  for (const auto& protocol : (*j)["protocols"]) {
    std::vector<std::optional<EvalResult>> results;
    std::vector<std::string> skipped;
    for (const auto& r : protocol["results"]) {
      if (r.contains("skipped")) {
        results.push_back(std::nullopt);
        skipped.push_back(r["skipped"].get<std::string>());
      } else {
        results.push_back(result_from_json(r));
        skipped.push_back("");
      }
    }
    c.results.push_back(std::move(results));
    c.skipped.push_back(std::move(skipped));
  }
  c.probes = j->value("probes", json::object());
  c.probes_over_steps = probes_over_steps(paths.run_dir(cell.name));
  return c;
}

}  // namespace txl
