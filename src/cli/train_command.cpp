// txl train --config F [--run-dir D] [--set key=value ...] [--force] [--nproc N [--oversubscribe]]
//           [--device D]
// txl train --config F --init-from RUN [--checkpoint best|last] [--run-dir D] [--set ...]
//           (fine-tuning: train/init_from.h)
// txl train --resume D [--set key=value ...] [--config F] [--nproc N] [--device D]
// txl train --config F --dry-run [--vocab-size V] [--set key=value ...]
//
// Data-parallel: --nproc N launches N ranks of this command on this machine (train/launch.h)
// after every check a launch can make (check_launch); a process started with RANK /
// WORLD_SIZE / MASTER_ADDR / MASTER_PORT set (as torchrun sets them, or --nproc does) is one
// rank (train/distributed.h), and --nproc there is refused.
//
// Signals: the first SIGINT/SIGTERM lets the current step finish, writes checkpoint.pt, prints
// how to resume and exits 128 + signal (130 / 143). A second one exits at once; checkpoints
// are written atomically, so that loses at most the steps since the last checkpoint.
#include <spdlog/fmt/fmt.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include "txl/cli/commands.h"
#include "txl/cli/options.h"
#include "txl/cli/signals.h"
#include "txl/data/corpus.h"
#include "txl/platform/device.h"
#include "txl/platform/resources.h"
#include "txl/run/run_dir.h"
#include "txl/train/distributed.h"
#include "txl/train/dry_run.h"
#include "txl/train/launch.h"
#include "txl/train/resume.h"
#include "txl/train/run_training.h"
#include "txl/train/training_data.h"
#include "txl/util/env.h"
#include "txl/util/error.h"

namespace txl {

namespace {

// This command's arguments without --nproc, and with the run directory named, so that every
// rank trains into the same one.
std::vector<std::string> rank_arguments(const TrainRequest& request) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\0', start);
    argv.push_back(all.substr(start, end - start));
    start = end == std::string::npos ? all.size() : end + 1;
  }
  std::vector<std::string> args;
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "--nproc") {
      ++i;
      continue;
    }
    if (argv[i].rfind("--nproc=", 0) == 0 || argv[i] == "--oversubscribe") continue;
    args.push_back(argv[i]);
  }
  if (request.resume_dir.empty() && request.run_dir.empty()) {
    args.push_back("--run-dir");
    args.push_back(default_run_dir(request.config_path));
  }
  return args;
}

// --nproc, refused where it means nothing: out of range, or in a process that is already
// one rank of a distributed run (it would train as that rank and wait for ranks that never
// come).
void check_nproc(int nproc) {
  if (nproc < 1 || nproc > 1024) {
    throw InputError("--nproc " + std::to_string(nproc) +
                     " is not valid; expected 1 to 1024 processes");
  }
  for (const char* name : {"RANK", "WORLD_SIZE"}) {
    if (!env_set(name)) continue;
    throw InputError("--nproc " + std::to_string(nproc) + " starts its own processes, but " + name +
                     "=" + std::to_string(*env_int(name)) +
                     " in the environment makes this one a rank of a distributed run started "
                     "elsewhere (torchrun, or another txl's --nproc); unset RANK and WORLD_SIZE, "
                     "or drop --nproc");
  }
}

struct LaunchOptions {
  std::optional<int> nproc;  // unset: no --nproc
  bool oversubscribe = false;
};

// The largest vocabulary --vocab-size takes: far above any word list (WikiText-103 has
// 267,735 words), so a larger number is a typo.
constexpr int64_t kMaxDryRunVocab = 100'000'000;

struct DryRunOptions {
  bool enabled = false;
  std::optional<int64_t> vocab_size;  // unset: build the vocabulary from data.dir
};

// --dry-run: the config checked and sized, nothing made, written or trained (the token cache
// included: what reading the corpus would add to it is discarded). The vocabulary size comes
// from --vocab-size, or from the corpus, which then gets every check txl train makes on it.
int run_dry_run(const TrainRequest& request, const DryRunOptions& dry) {
  if (request.config_path.empty())
    throw InputError("txl train --dry-run needs --config FILE (the configuration to size)");
  const Config config = config_with_overrides(read_json_file(request.config_path),
                                              request.overrides, request.config_path);
  int64_t vocab = 0;
  std::optional<Corpus> corpus;
  TokenCacheWrites discarded;  // never committed: a dry run writes nothing
  CorpusReadNeed read;
  const double held_before_read = current_rss_mb() * 1024.0 * 1024.0;
  if (dry.vocab_size) {
    if (*dry.vocab_size < 2 || *dry.vocab_size > kMaxDryRunVocab) {
      throw InputError("--vocab-size " + std::to_string(*dry.vocab_size) +
                       " is not valid; expected 2 to " + std::to_string(kMaxDryRunVocab) +
                       " tokens");
    }
    vocab = *dry.vocab_size;
    fmt::print(stderr,
               "dry run: the vocabulary of --vocab-size {}; data.dir ({}) is not read, nor "
               "checked\n",
               vocab, config.data.dir);
  } else {
    try {
      read = corpus_read_need(check_corpus_dir(config.data, available_ram_bytes()));
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) +
                       " (or give --vocab-size V to size the model without the corpus)");
    }
    corpus = load_corpus(config.data, &discarded);
    vocab = static_cast<int64_t>(corpus->vocab.size());
    check_segments_fit_streams(static_cast<int64_t>(corpus->train.size()), config.train);
  }
  DryRun run = dry_run(config, vocab, process_ram_limit_bytes(), corpus ? &corpus->train : nullptr);
  if (corpus) {
    run.read_peak_bytes = held_before_read + read.bytes;
    run.read_peak = read.peak;
  }
  fmt::print("{}", format_dry_run(run, config));
  return 0;
}

int run_train(TrainRequest request, const LaunchOptions& launch) {
  if (launch.nproc) check_nproc(*launch.nproc);
  if (launch.nproc.value_or(1) > 1) {
    const int nproc = *launch.nproc;
    const std::vector<std::string> args = rank_arguments(request);
    if (request.resume_dir.empty() && request.run_dir.empty())
      request.run_dir = args.back();  // the default run directory every rank is given
    check_launch(request, nproc, launch.oversubscribe);
    SignalScope signals;
    return launch_local_ranks(nproc, args, stop_signal());
  }
  const DistributedEnv env = distributed_env_from_environment();
  std::unique_ptr<Distributed> dist;
  if (env.world_size > 1) {
    dist = std::make_unique<Distributed>(env);  // waits for every rank
    request.rank = env.rank;
    request.world_size = env.world_size;
  }
  PreparedTraining run = prepare_training(request);
  if (dist) {
    dist->barrier();  // every rank prepared (a rank that failed has exited: this fails at once)
    run.options.dist = dist.get();
  }
  const bool root = env.rank == 0;
  const TrainOptions& options = run.options;
  if (root) {
    fmt::print(stderr, "run directory: {}\nconfig: {}\n", options.run_dir,
               config_to_json(run.config).dump());
  }
  TrainSummary summary;
  {
    SignalScope signals;
    summary = run_training(run, &stop_signal());
  }
  if (!root) return summary.interrupted ? 128 + summary.stop_signal : 0;

  if (summary.interrupted) {
    const int sig = summary.stop_signal;
    fmt::print(stderr, "interrupted at step {} by signal {}; checkpoint saved. Resume with: {}\n",
               summary.steps, sig, resume_command(options.run_dir, env.world_size));
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
  auto launch = std::make_shared<LaunchOptions>();
  auto device = std::make_shared<std::string>();
  auto dry = std::make_shared<DryRunOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model from a JSON config into a run directory");
  cmd->add_option("--config,-c", o->config_path, "JSON config (sections data, model, train, eval)");
  auto* run_dir = cmd->add_option("--run-dir", o->run_dir,
                                  "Run directory (default runs/<config name>-<timestamp>)");
  cmd->add_option("--set", o->overrides, "Override one key, e.g. --set train.max_steps=50");
  auto* force = cmd->add_flag("--force", o->force, "Overwrite an existing run directory");
  auto* resume = cmd->add_option("--resume", o->resume_dir,
                                 "Continue the run in this directory from its last checkpoint");
  auto* init_from = cmd->add_option(
      "--init-from", o->init_from,
      "Fine-tune: a new run starting from this run's weights and vocabulary (an imported run or "
      "a trained one), with a fresh optimizer, step 0 and --config's schedule");
  cmd->add_option("--checkpoint", o->init_checkpoint,
                  "With --init-from: best (best.pt, else checkpoint.pt) or last (checkpoint.pt)")
      ->needs(init_from);
  auto* nproc = cmd->add_option("--nproc", launch->nproc,
                                "Data-parallel: train with N processes on this machine "
                                "(train.batch_size streams split between them)");
  cmd->add_flag("--oversubscribe", launch->oversubscribe,
                "With --nproc: start more than 2 processes per core anyway")
      ->needs(nproc);
  cmd->add_option("--device", *device,
                  "cpu, cuda, cuda:N or auto (cuda:0 if there is one); the same as --set "
                  "train.device=D");
  auto* dry_run_flag = cmd->add_flag(
      "--dry-run", dry->enabled,
      "Check and size the config only: parameters, FLOPs per token, the memory estimate by "
      "part and whether it fits here; no run directory, no training");
  cmd->add_option("--vocab-size", dry->vocab_size,
                  "With --dry-run: size the model for this vocabulary instead of reading data.dir")
      ->needs(dry_run_flag);
  resume->excludes(run_dir);
  resume->excludes(force);
  resume->excludes(init_from);
  dry_run_flag->excludes(resume);
  dry_run_flag->excludes(nproc);
  dry_run_flag->excludes(init_from);
  cmd->callback([o, launch, device, dry, cmd, &exit_code] {
    refuse_empty_values(*cmd);
    parse_checkpoint_choice(o->init_checkpoint, "--checkpoint");
    if (!device->empty()) {
      resolve_device(*device, "--device");  // named as the user typed it
      o->overrides.push_back("train.device=" + *device);
    }
    exit_code = dry->enabled ? run_dry_run(*o, *dry) : run_train(*o, *launch);
  });
}

}  // namespace txl
