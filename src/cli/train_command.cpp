// txl train --config F [--run-dir D] [--set key=value ...] [--force]
// txl train --resume D [--set key=value ...] [--config F]
//
// Signals: the first SIGINT/SIGTERM lets the current step finish, writes checkpoint.pt, prints
// how to resume and exits 128 + signal (130 / 143). A second one exits at once; checkpoints
// are written atomically, so that loses at most the steps since the last checkpoint.
#include <spdlog/fmt/fmt.h>

#include <memory>

#include "txl/cli/commands.h"
#include "txl/cli/signals.h"
#include "txl/train/run_training.h"

namespace txl {

namespace {

int run_train(const TrainRequest& request) {
  PreparedTraining run = prepare_training(request);
  const TrainOptions& options = run.options;
  fmt::print(stderr, "run directory: {}\nconfig: {}\n", options.run_dir,
             config_to_json(run.config).dump());
  TrainSummary summary;
  {
    SignalScope signals;
    summary = run_training(run, &stop_signal());
  }

  if (summary.interrupted) {
    const int sig = summary.stop_signal;
    fmt::print(stderr,
               "interrupted at step {} by signal {}; checkpoint saved. Resume with: txl train "
               "--resume {}\n",
               summary.steps, sig, options.run_dir);
    return 128 + sig;
  }
  fmt::print(stderr,
             "done: {} steps | last loss {:.4f} | best valid ppl {:.3f} | {:.0f} tok/s{}\nrun "
             "directory: {}\n",
             summary.steps, summary.last_loss, summary.best_valid_ppl, summary.train_tokens_per_s,
             summary.skipped_steps > 0
                 ? fmt::format(" | {} non-finite steps skipped", summary.skipped_steps)
                 : "",
             options.run_dir);
  return 0;
}

}  // namespace

void setup_train(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TrainRequest>();
  auto* cmd = app.add_subcommand("train", "Train a model from a JSON config into a run directory");
  cmd->add_option("--config,-c", o->config_path, "JSON config (sections data, model, train, eval)");
  auto* run_dir = cmd->add_option("--run-dir", o->run_dir,
                                  "Run directory (default runs/<config name>-<timestamp>)");
  cmd->add_option("--set", o->overrides, "Override one key, e.g. --set train.max_steps=50");
  auto* force = cmd->add_flag("--force", o->force, "Overwrite an existing run directory");
  auto* resume = cmd->add_option("--resume", o->resume_dir,
                                 "Continue the run in this directory from its last checkpoint");
  resume->excludes(run_dir);
  resume->excludes(force);
  cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

}  // namespace txl
