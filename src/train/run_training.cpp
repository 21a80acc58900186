#include "txl/train/run_training.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <memory>

#include "txl/config/config_diff.h"
#include "txl/platform/device.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/run/checkpoint.h"
#include "txl/train/batcher.h"
#include "txl/train/dead_run.h"
#include "txl/train/distributed.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/init_from.h"
#include "txl/train/resume.h"
#include "txl/train/training_data.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

std::string key_of(const std::string& assignment) {
  std::string key = assignment.substr(0, assignment.find('='));
  const size_t first = key.find_first_not_of(" \t");
  const size_t last = key.find_last_not_of(" \t");
  return first == std::string::npos ? "" : key.substr(first, last - first + 1);
}

bool is_resumable(const std::string& key) {
  const auto& keys = resumable_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// The configuration to resume with: the run's config.json with the resumable keys changed
// by --set or by --config (which must otherwise equal the run's).
Config resume_config(const TrainRequest& o) {
  const RunPaths paths{o.resume_dir};
  check_not_special(paths.config(), "the run's config.json");
  if (!is_regular_file(paths.config())) {
    throw InputError("--resume " + o.resume_dir + ": " + paths.config() +
                     " is missing; not a txl run directory");
  }
  const nlohmann::json saved =
      config_to_json(config_from_json(read_json_file(paths.config()), paths.config()));
  nlohmann::json j = saved;
  if (!o.config_path.empty()) {
    const nlohmann::json resolved = config_to_json(
        config_with_overrides(read_json_file(o.config_path), o.overrides, o.config_path));
    const auto diffs = config_differences(saved, resolved, resumable_keys());
    if (!diffs.empty()) {
      throw InputError("--config " + o.config_path + " differs from the run's " + paths.config() +
                       " in keys that cannot change on resume (run vs --config: " + join(diffs) +
                       "); only " + join(resumable_keys()) + " may change");
    }
    j = resolved;
  } else {
    for (const auto& assignment : o.overrides) {
      const std::string key = key_of(assignment);
      if (!is_resumable(key)) {
        throw InputError("--set " + assignment + ": " + key + " cannot change on --resume; only " +
                         join(resumable_keys()) + " may change (start a new run for others)");
      }
    }
    j = config_to_json(config_with_overrides(j, o.overrides, paths.config()));
  }
  Config config = config_from_json(j, paths.config());
  for (const auto& change : config_differences(saved, config_to_json(config))) {
    fmt::print(stderr, "resume: changing {} (run vs now)\n", change);
  }
  return config;
}

}  // namespace

namespace {

// The run has a checkpoint.pt to resume from and every run file is a file (resuming rewrites
// them). The hint never advises --force while best.pt is intact: that would discard it.
void check_resumable(const std::string& dir) {
  const RunPaths paths{dir};
  const FileKind last = file_kind(paths.last_checkpoint());
  if (last == FileKind::kRegular) return check_run_files(dir);
  const std::string problem =
      "--resume " + dir + ": " +
      (last == FileKind::kMissing
           ? std::string("no checkpoint.pt there to resume from")
           : paths.last_checkpoint() + " is " + describe(last) + ", not a checkpoint file");
  if (is_regular_file(paths.best_checkpoint())) {
    throw InputError(problem + "; its best.pt is intact: evaluate it (txl eval --run " + dir +
                     "), or " + (last == FileKind::kMissing ? "" : "move checkpoint.pt away, ") +
                     "copy best.pt to checkpoint.pt and resume again to continue from best.pt's "
                     "step (the steps after it are trained again)");
  }
  if (last != FileKind::kMissing) {
    throw InputError(problem + "; move it out of " + dir +
                     " (the run has no other checkpoint to continue from)");
  }
  throw InputError(problem +
                   " (the run stopped before its first checkpoint); start it again with txl "
                   "train --config FILE --run-dir " +
                   dir + " --force");
}

// train.batch_size streams split evenly over the ranks.
void check_streams_per_rank(const Config& config, int world_size) {
  if (config.train.batch_size % world_size != 0) {
    throw InputError("train.batch_size (" + std::to_string(config.train.batch_size) +
                     ") must be a multiple of the number of processes (" +
                     std::to_string(world_size) + "): each takes an equal share of the streams");
  }
}

// train.device exists here (InputError otherwise, before anything is written). Several
// processes train on the CPU only: their collectives run on Gloo over CPU tensors, and txl
// does not use NCCL (CUDA's collectives) yet.
void check_training_device(const Config& config, int world_size) {
  const torch::Device device = resolve_device(config.train.device, "train.device");
  if (world_size > 1 && !gloo_built()) {
    throw InputError(std::to_string(world_size) + " processes: " + gloo_missing_reason());
  }
  if (world_size > 1 && !device.is_cpu()) {
    throw InputError("train.device " + config.train.device + " with " + std::to_string(world_size) +
                     " processes: data-parallel training runs on the CPU only (Gloo); train on "
                     "one GPU with one process, or with --device cpu on several");
  }
}

// The corpus, read with the vocabulary of --init-from's run, with a fine-tuned run's own
// vocab.json on resume (the corpus would build another), else with one built from it.
Corpus load_request_corpus(const TrainRequest& o, const Config& config, const InitSource* init,
                           TrainingFootprint* footprint, TokenCacheWrites* writes = nullptr) {
  if (init != nullptr)
    return load_training_data(config, writes, &init->vocab, o.world_size, footprint);
  if (!o.resume_dir.empty() && is_fine_tuned_run(o.resume_dir)) {
    const Vocab vocab = Vocab::load(RunPaths{o.resume_dir}.vocab());
    return load_training_data(config, writes, &vocab, o.world_size, footprint);
  }
  return load_training_data(config, writes, nullptr, o.world_size, footprint);
}

// --init-from's run, read and checked against the new run's config (null without it).
std::shared_ptr<InitSource> request_init(const TrainRequest& o, const Config& config,
                                         const std::string& run_dir) {
  if (o.init_from.empty()) return nullptr;
  auto init =
      std::make_shared<InitSource>(load_init_source(o.init_from, o.init_checkpoint, run_dir));
  check_init_config(*init, config, o.config_path);
  return init;
}

// A rank other than 0: the same config and data, checked the same way, and nothing written.
PreparedTraining prepare_follower(const TrainRequest& o) {
  PreparedTraining p;
  const bool resume = !o.resume_dir.empty();
  if (resume) {
    p.config = resume_config(o);
  } else {
    p.config = config_with_overrides(read_json_file(o.config_path), o.overrides, o.config_path);
  }
  p.options.run_dir = resume ? o.resume_dir : o.run_dir;
  p.options.resume = resume;
  p.options.init = request_init(o, p.config, p.options.run_dir);
  check_streams_per_rank(p.config, o.world_size);
  check_training_device(p.config, o.world_size);
  check_corpus_dir(p.config.data, available_ram_bytes() / o.world_size);
  p.corpus = load_request_corpus(o, p.config, p.options.init.get(), &p.footprint);
  return p;
}

// Rank 0 of a resume: the run directory locked, its config and checkpoint checked.
void prepare_resume(const TrainRequest& o, PreparedTraining& p) {
  if (const FileKind kind = file_kind(o.resume_dir); kind != FileKind::kDirectory) {
    throw InputError("--resume " + o.resume_dir + ": " +
                     (kind == FileKind::kMissing
                          ? "no such run directory"
                          : "is " + describe(kind) + ", expected a run directory"));
  }
  p.lock = std::make_unique<RunLock>(o.resume_dir);
  Config& config = p.config = resume_config(o);
  const RunPaths paths{o.resume_dir};
  check_resumable(o.resume_dir);
  if (!holds_optimizer_state(paths.last_checkpoint()))
    throw InputError("--resume " + o.resume_dir + ": " + weights_only(paths.last_checkpoint()));
  const auto state = read_checkpoint_state(paths.last_checkpoint());
  if (state.step >= config.train.max_steps) {
    throw InputError(o.resume_dir + " already finished (" + std::to_string(state.step) +
                     " of train.max_steps = " + std::to_string(config.train.max_steps) +
                     " steps); raise it with --set train.max_steps=N to train further");
  }
  check_resume_world(state.world_size, o.world_size, paths);
  check_streams_per_rank(config, o.world_size);
  check_training_device(config, o.world_size);
  check_corpus_dir(config.data, available_ram_bytes() / o.world_size);
  p.corpus = load_request_corpus(o, config, nullptr, &p.footprint);
  if (!o.check_only) remove_stale_temporaries(o.resume_dir);
  p.options.run_dir = o.resume_dir;
  p.options.resume = true;
}

// Rank 0 of a new run: every check, then (unless check_only) the run directory made.
void prepare_new_run(const TrainRequest& o, PreparedTraining& p) {
  if (o.config_path.empty())
    throw InputError("txl train needs --config FILE (or --resume RUN_DIR)");
  Config& config = p.config =
      config_with_overrides(read_json_file(o.config_path), o.overrides, o.config_path);
  TrainOptions& options = p.options;
  options.run_dir = o.run_dir.empty() ? default_run_dir(o.config_path) : o.run_dir;
  options.init = request_init(o, config, options.run_dir);
  check_streams_per_rank(config, o.world_size);
  check_training_device(config, o.world_size);
  check_corpus_dir(config.data, available_ram_bytes() / o.world_size);
  TokenCacheWrites cache_writes;  // written once the run directory is made
  // Lock before --force clears anything, so a run in progress there is never touched.
  if (is_directory(options.run_dir)) p.lock = std::make_unique<RunLock>(options.run_dir);
  // Every check that can fail on the input comes before the run directory is made or
  // cleared: a refused run leaves the disk as it was.
  if (const std::string dead =
          o.force ? "" : dead_run_diagnosis(options.run_dir, process_ram_limit_bytes());
      !dead.empty())
    throw InputError("--run-dir " + options.run_dir + " " + dead);
  check_run_dir(options.run_dir, o.force);
  p.corpus = load_request_corpus(o, config, options.init.get(), &p.footprint, &cache_writes);
  if (o.check_only) return;
  p.created_dir = !is_directory(options.run_dir);
  prepare_run_dir(options.run_dir, o.force);
  cache_writes.commit();
  if (options.init) write_init_record(*options.init, options.run_dir);
  if (!p.lock) p.lock = std::make_unique<RunLock>(options.run_dir);
}

}  // namespace

PreparedTraining prepare_training(const TrainRequest& o) {
  if (!o.init_from.empty() && !o.resume_dir.empty()) {
    throw InputError("--init-from starts a new run; --resume " + o.resume_dir +
                     " continues one from its own checkpoint: give one of them");
  }
  if (o.rank != 0) return prepare_follower(o);
  if (o.world_size > 1 && o.resume_dir.empty() && o.run_dir.empty()) {
    throw InputError("a distributed run needs --run-dir (every process must name the same one)");
  }
  PreparedTraining p;
  if (o.resume_dir.empty()) {
    prepare_new_run(o, p);
  } else {
    prepare_resume(o, p);
  }
  return p;
}

void check_launch(const TrainRequest& request, int nproc, bool oversubscribe) {
  TrainRequest probe = request;
  probe.rank = 0;
  probe.world_size = nproc;
  probe.check_only = true;
  const PreparedTraining p = prepare_training(probe);
  const int64_t cores = logical_cores();
  if (nproc > kMaxThreadsPerCore * cores && !oversubscribe) {
    throw InputError(fmt::format(
        "--nproc {} is more than {} processes per core on this machine's {} cores: they would "
        "crawl and take long to stop; use at most --nproc {}, or add --oversubscribe to start "
        "them anyway",
        nproc, kMaxThreadsPerCore, cores, kMaxThreadsPerCore * cores));
  }
  // Every process holds the whole model, its gradients and AdamW state, the activations of
  // its share of the streams, LibTorch and the corpus: the footprint prepare_training measured
  // for one of them, N times.
  try {
    check_training_footprint(p.footprint, process_ram_limit_bytes(), nproc);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--nproc {}: {}", nproc, e.what()));
  }
}

TrainSummary run_training(PreparedTraining& run, const std::atomic<int>* stop_signal) {
  run.options.stop_signal = stop_signal;
  try {
    return train_model(run.config, run.options, std::move(run.corpus));
  } catch (...) {
    // A new run that fails before its first checkpoint (out of memory, a full disk) has
    // nothing to resume; what it wrote (config.json, vocab.json, metrics.jsonl) would only
    // make the next `txl train` into the same directory refuse it.
    const bool root = run.options.dist->is_root();
    if (root && !run.options.resume &&
        !is_regular_file(RunPaths{run.options.run_dir}.last_checkpoint())) {
      run.lock.reset();
      remove_run(run.options.run_dir, /*keep_dir=*/!run.created_dir);
      fmt::print(stderr, "removed what this run wrote to {} (it had no checkpoint yet)\n",
                 run.options.run_dir);
    }
    throw;
  }
}

}  // namespace txl
