// txl train --config F [--run-dir D] [--set key=value ...] [--force] [--resume D]
#include <csignal>
#include <memory>

#include <spdlog/fmt/fmt.h>

#include "txl/cli/commands.h"
#include "txl/data/corpus.h"
#include "txl/train/run_dir.h"
#include "txl/train/trainer.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {

namespace {

struct TrainCommandOptions {
  std::string config_path;
  std::string run_dir;
  std::string resume_dir;
  std::vector<std::string> overrides;
  bool force = false;
};

// 0 = run; otherwise the signal number that asked us to stop.
std::atomic<int> g_stop_signal{0};

void on_signal(int sig) {
  if (g_stop_signal.exchange(sig) != 0) {
    // Second signal: leave at once. Checkpoints are written atomically, so nothing is lost
    // beyond the current interval.
    std::_Exit(128 + sig);
  }
}

Config resolve_config(const TrainCommandOptions& o) {
  auto j = read_json_file(o.config_path);
  for (const auto& assignment : o.overrides) apply_override(j, assignment);
  return config_from_json(j, o.config_path);
}

int run_train(const TrainCommandOptions& o) {
  Config config;
  TrainOptions options;
  if (!o.resume_dir.empty()) {
    RunPaths paths{o.resume_dir};
    if (!is_regular_file(paths.last_checkpoint())) {
      throw InputError("--resume " + o.resume_dir + ": no checkpoint.pt there to resume from");
    }
    auto j = read_json_file(paths.config());
    for (const auto& assignment : o.overrides) {
      const auto key = assignment.substr(0, assignment.find('='));
      if (key != "train.max_steps" && key != "train.log_interval" && key != "train.eval_interval" &&
          key != "train.threads" && key != "train.eval_max_tokens") {
        throw InputError("--set " + key + " cannot change on --resume (only train.max_steps, "
                         "train.log_interval, train.eval_interval, train.eval_max_tokens, train.threads)");
      }
      apply_override(j, assignment);
    }
    config = config_from_json(j, paths.config());
    const auto state = read_checkpoint_state(paths.last_checkpoint());
    if (state.step >= config.train.max_steps) {
      throw InputError(o.resume_dir + " already finished (" + std::to_string(state.step) +
                       " of train.max_steps = " + std::to_string(config.train.max_steps) +
                       " steps); raise it with --set train.max_steps=N to train further");
    }
    check_corpus_dir(config.data);
    options.run_dir = o.resume_dir;
    options.resume = true;
  } else {
    if (o.config_path.empty()) throw InputError("txl train needs --config FILE (or --resume RUN_DIR)");
    config = resolve_config(o);
    check_corpus_dir(config.data);
    options.run_dir = o.run_dir.empty() ? default_run_dir(o.config_path) : o.run_dir;
    prepare_run_dir(options.run_dir, o.force);
  }
  fmt::print(stderr, "run directory: {}\nconfig: {}\n", options.run_dir, config_to_json(config).dump());

  options.stop_signal = &g_stop_signal;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const auto summary = train_model(config, options);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  if (summary.interrupted) {
    const int sig = g_stop_signal.load();
    fmt::print(stderr, "interrupted at step {}; checkpoint saved. Resume with: txl train --resume {}\n",
               summary.steps, options.run_dir);
    return 128 + sig;
  }
  fmt::print(stderr, "done: {} steps | last loss {:.4f} | best valid ppl {:.3f} | {:.0f} tok/s\nrun directory: {}\n",
             summary.steps, summary.last_loss, summary.best_valid_ppl, summary.train_tokens_per_s,
             options.run_dir);
  return 0;
}

}  // namespace

void setup_train(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TrainCommandOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model from a JSON config into a run directory");
  cmd->add_option("--config,-c", o->config_path, "JSON config (sections data, model, train, eval)");
  cmd->add_option("--run-dir", o->run_dir, "Run directory (default runs/<config name>-<timestamp>)");
  cmd->add_option("--set", o->overrides, "Override one key, e.g. --set train.max_steps=50");
  cmd->add_flag("--force", o->force, "Overwrite an existing run directory");
  cmd->add_option("--resume", o->resume_dir, "Continue the run in this directory from its last checkpoint");
  cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

}  // namespace txl
