// Fine-tuning from another run's weights (init_from.h): every check on the source first, then
// the record and the weights.
#include "txl/train/init_from.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>

#include "txl/config/config_diff.h"
#include "txl/run/interop.h"
#include "txl/run/run_dir.h"
#include "txl/util/byte_source.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/hash.h"
#include "txl/util/text.h"

namespace txl {

namespace fs = std::filesystem;

namespace {

// What can be said about the path before a run is read from it.
void check_source_path(const std::string& dir, const std::string& run_dir) {
  const FileKind kind = file_kind(dir);
  if (kind == FileKind::kMissing)
    throw InputError("--init-from " + dir + ": no such run directory");
  if (kind != FileKind::kDirectory) {
    throw InputError("--init-from " + dir + " is " + describe(kind) +
                     ", expected a run directory (written by txl train or txl import)");
  }
  if (same_file_key(dir) == same_file_key(run_dir)) {
    throw InputError("--init-from " + dir +
                     " is also the new run's --run-dir; a fine-tuned run is a new run beside "
                     "its source: give another --run-dir");
  }
  const RunPaths paths{dir};
  for (const auto& file : {paths.config(), paths.vocab()}) {
    check_not_special(file, "a file of the run");
    if (!is_regular_file(file)) {
      throw InputError("--init-from " + dir + ": " + file +
                       " is missing; not a txl run directory (txl train or txl import writes one)");
    }
  }
}

}  // namespace

InitSource load_init_source(const std::string& dir, const std::string& which,
                            const std::string& run_dir) {
  check_source_path(dir, run_dir);
  InitSource source;
  source.dir = dir;
  const RunPaths paths{dir};
  source.checkpoint = checkpoint_file(paths, which);
  if (file_kind(source.checkpoint) == FileKind::kMissing) {
    throw InputError("--init-from " + dir + ": " + source.checkpoint +
                     " is missing: the run has no checkpoint to start from yet");
  }
  try {
    LoadedRun run = load_run(dir, which, torch::kCPU);
    source.config = run.config;
    source.vocab = run.vocab;
    source.step = run.state.step;
    source.model = run.model;
    // Hashed in pieces: a 151M-parameter run's checkpoint is 1.8 GB (weights and AdamW state).
    source.hash = xxh64_of(*open_file_source(source.checkpoint, "a checkpoint file"));
    if (file_kind(paths.origin()) != FileKind::kMissing)
      source.origin = read_json_file(paths.origin());
  } catch (const InputError& e) {
    throw InputError("--init-from " + dir + ": " + e.what());
  }
  return source;
}

void check_init_config(const InitSource& source, const Config& config,
                       const std::string& config_path) {
  std::vector<std::string> diffs = shape_differences(source.config, config);
  if (source.config.data.tokenizer != config.data.tokenizer) {
    diffs.insert(diffs.begin(), fmt::format("data.tokenizer: \"{}\" vs \"{}\"",
                                            to_string(source.config.data.tokenizer),
                                            to_string(config.data.tokenizer)));
  }
  if (diffs.empty()) return;
  throw InputError(fmt::format(
      "--config {} differs from {} in keys that set the model's shape or its vocabulary "
      "({} vs --config: {}); the weights of --init-from {} fit only a model of the same shape. "
      "Keys that set no shape (dropout, train.lr, the schedule, lengths, clamp_len...) may "
      "differ",
      config_path, RunPaths{source.dir}.config(), source.dir, join(diffs, "; "), source.dir));
}

void write_init_record(const InitSource& source, const std::string& run_dir) {
  nlohmann::json record = {{"init_from", fs::absolute(source.dir).lexically_normal().string()},
                           {"checkpoint", fs::path(source.checkpoint).filename().string()},
                           {"step", source.step},
                           {"xxh64", hex64(source.hash)},
                           {"started_at", utc_now()}};
  if (!source.origin.is_null()) record["origin"] = source.origin;
  write_file_atomic(RunPaths{run_dir}.origin(), record.dump(2) + "\n");
}

void take_init_weights(InitSource& source, TransformerLM& model) {
  const auto from = source.model->named_parameters();
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    const torch::Tensor* value = from.find(item.key());
    // check_init_config let only configs of the same shape through.
    TORCH_CHECK(value != nullptr && value->sizes() == item.value().sizes(),
                "--init-from: parameter ", item.key(), " has no counterpart of its shape");
    item.value().copy_(*value);
  }
  source.model = TransformerLM(nullptr);  // its memory is the training's now
}

bool is_fine_tuned_run(const std::string& run_dir) {
  const std::string path = RunPaths{run_dir}.origin();
  if (file_kind(path) != FileKind::kRegular) return false;
  try {
    const auto j = read_json_file(path);
    return j.is_object() && j.contains("init_from");
  } catch (const InputError&) {
    return false;  // an unreadable record: the run is read as an ordinary one
  }
}

}  // namespace txl
