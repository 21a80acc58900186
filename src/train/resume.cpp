#include "txl/train/resume.h"

#include "txl/config/config_diff.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

const std::vector<std::string>& resumable_keys() {
  static const std::vector<std::string> keys = {
      "train.max_steps",
      "train.log_interval",
      "train.eval_interval",
      "train.eval_max_tokens",
      "train.threads",
      "train.device",
      "train.skip_nonfinite",
      "train.probes",
      "train.probe_interval",
      "train.probe_max_tokens",
      "data.dir",
      "eval.lengths",
      "eval.split",
      "eval.batch_tokens",
  };
  return keys;
}

std::string resume_command(const std::string& run_dir, int world_size) {
  std::string command = "txl train --resume " + shell_quote(run_dir);
  if (world_size > 1) command += " --nproc " + std::to_string(world_size);
  return command;
}

void check_resume_world(int64_t saved, int64_t now, const RunPaths& paths) {
  if (saved == now) return;
  throw InputError(paths.last_checkpoint() + ": the checkpoint was trained by " +
                   std::to_string(saved) + " process(es) and this resume has " +
                   std::to_string(now) +
                   "; each process holds its own streams' memory, so resume with the same "
                   "number (" +
                   resume_command(paths.dir, static_cast<int>(saved)) + ")");
}

void check_resume_matches(const TrainState& saved, const TrainState& now, const RunPaths& paths) {
  const std::string ckpt = paths.last_checkpoint();
  const auto diffs = config_differences(saved.config, now.config, resumable_keys());
  if (!diffs.empty()) {
    throw InputError(ckpt + ": the checkpoint was written with a different configuration than " +
                     paths.config() + " (checkpoint vs now: " + join(diffs, "; ") +
                     "); on resume only " + join(resumable_keys(), ", ") + " may change");
  }
  check_resume_world(saved.world_size, now.world_size, paths);
  if (saved.vocab_checksum != now.vocab_checksum) {
    throw InputError(ckpt + ": the checkpoint was trained with a different vocabulary than " +
                     paths.vocab());
  }
  if (saved.train_tokens != now.train_tokens || saved.train_checksum != now.train_checksum) {
    throw InputError(ckpt + ": the training split changed since this checkpoint was written (" +
                     std::to_string(saved.train_tokens) + " tokens then, " +
                     std::to_string(now.train_tokens) +
                     " now, or different text); resuming would read other data. Restore the "
                     "corpus or start a new run");
  }
}

void save_or_check_vocab(const Config& config, const std::string& run_dir, bool resume,
                         const Vocab& vocab) {
  const RunPaths paths{run_dir};
  if (resume) {
    const Vocab saved = Vocab::load(paths.vocab());
    if (!(saved == vocab)) {
      throw InputError(paths.vocab() + ": the corpus in " + config.data.dir +
                       " now gives a different vocabulary; cannot resume");
    }
  } else {
    vocab.save(paths.vocab());
    write_file_atomic(paths.config(), config_to_json(config).dump(2) + "\n");
  }
}

void check_resumed_memory(const Memory& memory, const Config& config, const std::string& ckpt) {
  const auto& mc = config.model;
  bool fits = memory.empty() || static_cast<int64_t>(memory.layers.size()) == mc.n_layer;
  for (const auto& layer : memory.layers) {
    fits = fits && layer.dim() == 3 && layer.size(0) == config.train.batch_size &&
           layer.size(2) == mc.d_model;  // [B, M, C]
  }
  if (!fits) {
    throw InputError(ckpt + ": the saved memory does not fit " + std::to_string(mc.n_layer) +
                     " layers x " + std::to_string(config.train.batch_size) +
                     " streams x d_model " + std::to_string(mc.d_model));
  }
}

}  // namespace txl
