// The training loop's phases share TrainRun (below), which only they use; they stay in this
// one file (over the ~400 lines the house style aims for) rather than make TrainRun a public
// header. Data loading (training_data.cpp), validation (validation_loss.cpp) and the data-parallel
// collectives (distributed.cpp) live in their own files.
#include "txl/train/trainer.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <limits>
#include <optional>

#include "txl/data/corpus.h"
#include "txl/eval/evaluate.h"
#include "txl/model/transformer.h"
#include "txl/platform/device.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/platform/torch_error.h"
#include "txl/run/checkpoint.h"
#include "txl/run/run_dir.h"
#include "txl/train/adamw_step.h"
#include "txl/train/batcher.h"
#include "txl/train/distributed.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/grad_clip.h"
#include "txl/train/metrics_log.h"
#include "txl/train/resume.h"
#include "txl/train/schedule.h"
#include "txl/train/step_checks.h"
#include "txl/train/train_probes.h"
#include "txl/train/validation_loss.h"
#include "txl/util/clock.h"
#include "txl/util/env.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// Everything the training loop reads and mutates, owned in one place: each phase below takes
// it by reference, so what a phase touches is visible in its signature rather than hidden in
// a lambda's captures.
struct TrainRun {
  TrainRun(const Config& c, const TrainOptions& o, const Corpus& data)
      : config(c),
        options(o),
        corpus(data),
        paths{o.run_dir},
        device(resolve_device(c.train.device, "train.device")),
        model(make_model(c.model, data.vocab.size(), device)),
        optimizer(model->parameters(),
                  torch::optim::AdamWOptions(c.train.lr).weight_decay(c.train.weight_decay)),
        batcher(data.train, c.train.batch_size, c.train.tgt_len),
        generator(default_generator(device)),
        tokens_per_step(c.train.batch_size * c.train.tgt_len),
        probes(c, data),
        dist(*o.dist),
        root(dist.is_root()),
        world(dist.world_size()) {}

  const Config& config;
  const TrainOptions& options;
  const Corpus& corpus;
  RunPaths paths;
  torch::Device device;  // train.device: where the model, its batches and memory live
  TransformerLM model;
  torch::optim::AdamW optimizer;
  StreamBatcher batcher;
  TrainState state;
  Memory memory;                      // [B, M, C] per layer, carried across segments
  std::optional<MetricsLog> metrics;  // opened only after a resume has truncated the file
  at::Generator generator;            // the device's generator, which dropout draws from
  std::vector<int64_t> inject_nan;    // testing hooks, see trainer.h
  std::vector<int64_t> inject_stop;
  int64_t tokens_per_step;            // B * Q
  TrainProbes probes;                 // train.probes, every train.probe_interval steps
  int64_t first_step = 0;             // state.step when this process started (> 0 on resume)
  int64_t first_tokens = 0;           // state.tokens_seen then
  int64_t interval_start_tokens = 0;  // state.tokens_seen at the start of the log interval
  int64_t consecutive_skips = 0;
  Clock::time_point interval_start;  // start of the current log interval
  Clock::time_point run_start;       // start of this process's steps (for eta and tok/s)
  TrainSummary summary;
  Distributed& dist;  // single_process() when this process trains alone
  bool root;          // writes the run directory and prints
  int world;          // processes training
};

// Whether every rank's memory is finite (the same answer on every rank; collective).
bool memory_finite(TrainRun& run) {
  const bool here = all_finite(run.memory.layers);
  return run.dist.max(here ? 0 : 1) == 0;
}

// A metrics line (rank 0 only).
void write_metrics(TrainRun& run, const nlohmann::json& line) {
  if (run.root) run.metrics->write(line);
}

// What one forward/backward pass produced; the update is applied (or not) afterwards.
struct StepOutcome {
  int64_t step = 0;  // 1-based number of this step
  double lr = 0.0;
  double loss = 0.0;  // mean nll over the segment, nats/token
  double grad_norm = 0.0;
  bool finite = false;
  int64_t tokens = 0;  // B * Q of the segment
};

// The state before a step, restored (and checkpointed) if the step turns out non-finite.
// Memory is replaced, never modified in place, so a copy of the handles is a snapshot.
struct StepSnapshot {
  int64_t position = 0;
  Memory memory;
  torch::Tensor rng;
};

bool contains(const std::vector<int64_t>& steps, int64_t step) {
  return std::find(steps.begin(), steps.end(), step) != steps.end();
}

// Loads checkpoint.pt into the run after checking that it continues this very run.
void restore_run(TrainRun& run) {
  const std::string ckpt = run.paths.last_checkpoint();
  auto loaded = load_checkpoint(ckpt, run.model, &run.optimizer);
  check_resume_matches(loaded.state, run.state, run.paths);
  const TrainState& s = loaded.state;
  restore_progress(run.state, s);
  if (s.stream_position >= run.batcher.stream_len() - 1) {
    throw InputError(ckpt + ": stream position " + std::to_string(s.stream_position) +
                     " lies outside the training streams (" +
                     std::to_string(run.batcher.stream_len()) + " tokens each)");
  }
  run.batcher.set_position(s.stream_position);
  run.memory = std::move(loaded.memory);
  check_resumed_memory(run.memory, run.config, ckpt);
  for (auto& layer : run.memory.layers) layer = local_rows(run.dist, layer);
  if (!run.root) return;
  truncate_metrics(run.paths.metrics(), run.state.step);
  // Only now that the checkpoint fits: config.json takes the new values of the resumable
  // keys (train.max_steps), which a later --resume must see.
  write_file_atomic(run.paths.config(), config_to_json(run.config).dump(2) + "\n");
  fmt::print(stderr, "resumed at step {} ({} tokens seen)\n", run.state.step,
             run.state.tokens_seen);
}

// Fingerprints the run (what a later resume is checked against), restores it on --resume,
// prints the model line and starts the clocks.
void start_run(TrainRun& run, int threads) {
  const Config& config = run.config;
  run.state.config = config_to_json(config);
  run.state.vocab_checksum = run.corpus.vocab.checksum();
  run.state.train_tokens = static_cast<int64_t>(run.corpus.train.size());
  run.state.train_checksum =
      xxh64(run.corpus.train.data(), run.corpus.train.size() * sizeof(int32_t));
  run.state.world_size = run.world;
  if (run.options.resume) restore_run(run);
  if (run.root) {
    fmt::print(stderr,
               "model: {} parameters | {} | {} layers, d_model {}, {} heads x {} | threads {}{}{} "
               "| {}\n",
               count_parameters(*run.model), to_string(config.model.pos_encoding),
               config.model.n_layer, config.model.d_model, config.model.n_head, config.model.d_head,
               threads, run.world > 1 ? fmt::format(" x {} processes", run.world) : "",
               run.device.is_cpu() ? "" : " | on " + run.device.str(),
               to_string(config.train.precision));
    run.metrics.emplace(run.paths.metrics());
  }
  // A resumed interval continues its clock, so its ms/step matches the uninterrupted run's.
  run.interval_start =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(run.state.interval_seconds));
  run.run_start = Clock::now();
  run.first_step = run.state.step;
  run.first_tokens = run.state.tokens_seen;
  // A resumed interval's tokens so far, as fixed-length segments would have had them.
  run.interval_start_tokens =
      run.state.tokens_seen - run.state.interval_steps * run.tokens_per_step;
  run.model->train();
}

void save_run(TrainRun& run, const std::string& path) {
  run.state.stream_position = run.batcher.position();
  run.state.interval_seconds = seconds_since(run.interval_start);
  const Memory memory = gather_memory(run.dist, run.memory);  // collective: every rank saves
  if (!run.root) return;
  try {
    save_checkpoint(path, run.state, run.model, &run.optimizer, memory);
  } catch (const std::exception& e) {
    // Before the first checkpoint there is nothing to resume (run_training then removes what
    // the run wrote and says so): one message, the true one.
    if (!is_regular_file(RunPaths{run.options.run_dir}.last_checkpoint())) {
      throw std::runtime_error(fmt::format(
          "step {}: {}; no checkpoint had been written yet, so there is nothing to resume: free "
          "space (or fix the cause) and start the run again",
          run.state.step, error_text(e)));
    }
    // write_file_atomic removed its temporary: the previous checkpoint is untouched.
    throw std::runtime_error(fmt::format(
        "step {}: {}; the previous checkpoints are intact. Free space (or fix the cause) "
        "and continue with: {}",
        run.state.step, error_text(e), resume_command(run.options.run_dir, run.world)));
  }
}

StepSnapshot snapshot_before_step(TrainRun& run) {
  return {run.batcher.position(), run.memory, run.generator.get_state()};
}

// Reads the next segment and runs forward and backward; the optimizer is not stepped yet.
StepOutcome forward_backward(TrainRun& run) {
  const auto& tc = run.config.train;
  StepOutcome out;
  out.step = run.state.step + 1;
  const auto segment = run.batcher.next(segment_length(tc, out.step));
  if (segment.starts_epoch) run.memory = Memory{};
  const torch::Tensor inputs = local_rows(run.dist, segment.inputs).to(run.device);  // [B / w, Q]
  seed_dropout(run.dist, run.generator, tc.seed, out.step);
  out.lr = learning_rate(tc, out.step);
  for (auto& group : run.optimizer.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(out.lr);
  }

  torch::Tensor loss;
  {
    AutocastGuard autocast(tc.precision, run.device);
    ForwardOptions fwd;
    fwd.targets = local_rows(run.dist, segment.targets).to(run.device);
    fwd.keep_memory = run.model->has_memory() ? tc.mem_len : 0;
    fwd.key_window = same_length_key_window(tc.same_length, tc.mem_len);
    auto result = run.model->forward(inputs, run.memory, fwd);
    loss = result.nll.mean();  // []
    run.memory = std::move(result.memory);
  }
  if (contains(run.inject_nan, out.step)) loss = loss * std::numeric_limits<float>::quiet_NaN();
  clear_gradients(run.model->parameters());
  loss.backward();
  // Equal shards: the mean of the ranks' mean gradients is the whole batch's.
  run.dist.average_gradients(run.model->parameters());
  out.grad_norm = tc.clip > 0 ? clip_gradients(run.model->parameters(), tc.clip)
                              : total_grad_norm(run.model->parameters());
  out.loss = loss.item<double>();
  out.loss = run.dist.sum(out.loss) / run.world;
  out.finite = std::isfinite(out.loss) && std::isfinite(out.grad_norm);
  out.tokens = segment.inputs.numel();
  return out;
}

// Stops the run on a non-finite step, leaving checkpoint.pt at the last finite state if the
// weights still are finite.
[[noreturn]] void stop_on_nonfinite(TrainRun& run, const StepSnapshot& before,
                                    const StepOutcome& step) {
  // Weights and optimizer are untouched by this step; rewind data, memory and RNG too and the
  // state is exactly that after the previous (finite) step.
  run.batcher.set_position(before.position);
  run.memory = before.memory;
  run.generator.set_state(before.rng);
  const std::string ckpt = run.paths.last_checkpoint();
  std::string where;
  if (all_finite(run.model->parameters()) && memory_finite(run)) {
    save_run(run, ckpt);
    where = fmt::format("{} holds step {}, the last finite state", ckpt, run.state.step);
  } else {
    where = is_regular_file(ckpt)
                ? "the weights are no longer finite; " + ckpt + " holds the last good state"
                : "the weights are no longer finite and no checkpoint was written yet";
  }
  const std::string why =
      run.consecutive_skips >= kMaxConsecutiveSkips
          ? fmt::format("{} consecutive non-finite steps were skipped, giving up",
                        run.consecutive_skips)
          : "training stopped";
  throw std::runtime_error(fmt::format(
      "step {}: loss {} / gradient norm {} is not finite; {}. {}. To continue: {} --set "
      "train.skip_nonfinite=true (skips such steps), or start again with a lower train.lr or "
      "longer train.warmup_steps",
      step.step, step.loss, step.grad_norm, why, where,
      resume_command(run.options.run_dir, run.world)));
}

// A non-finite step: skipped (train.skip_nonfinite, up to kMaxConsecutiveSkips in a row) or
// the run stops.
void handle_nonfinite(TrainRun& run, const StepSnapshot& before, const StepOutcome& step) {
  if (!run.config.train.skip_nonfinite || run.consecutive_skips >= kMaxConsecutiveSkips) {
    stop_on_nonfinite(run, before, step);
  }
  // Skip: no update. A memory computed by a non-finite forward would poison the segments
  // after it, so it is dropped.
  run.consecutive_skips += 1;
  run.state.skipped_steps += 1;
  if (!memory_finite(run)) run.memory = Memory{};
  if (run.root) {
    fmt::print(stderr,
               "step {:>6}: loss {} / gradient norm {} is not finite; skipped ({} so far)\n",
               step.step, step.loss, step.grad_norm, run.state.skipped_steps);
  }
  write_metrics(
      run, {{"step", step.step}, {"nonfinite", true}, {"skipped_steps", run.state.skipped_steps}});
}

void apply_step(TrainRun& run, const StepOutcome& step) {
  run.consecutive_skips = 0;
  adamw_step(run.optimizer);
  run.state.interval_loss_sum += step.loss;
  run.state.interval_finite += 1;
}

// Counts the step as taken, applied or skipped.
void finish_step(TrainRun& run, const StepOutcome& step) {
  run.state.step = step.step;
  run.state.tokens_seen += step.tokens;
  run.state.lr = step.lr;
  run.state.interval_steps += 1;
}

// One progress line (stderr and metrics.jsonl) for the interval that ends at this step.
void log_progress(TrainRun& run, double lr) {
  TrainState& state = run.state;
  const int64_t max_steps = run.config.train.max_steps;
  const double elapsed = seconds_since(run.interval_start);
  const double ms_per_step = 1000.0 * elapsed / state.interval_steps;
  const double tok_s =
      static_cast<double>(state.tokens_seen - run.interval_start_tokens) / std::max(elapsed, 1e-9);
  const double mean_loss = state.interval_finite > 0
                               ? state.interval_loss_sum / state.interval_finite
                               : std::numeric_limits<double>::quiet_NaN();
  const double done = state.step - run.first_step;
  const double eta = seconds_since(run.run_start) / done * (max_steps - state.step);
  if (run.root) {
    fmt::print(stderr,
               "step {:>6}/{:<6} | loss {:7.4f} | ppl {:9.2f} | lr {:.2e} | {:7.1f} ms/step | "
               "{:7.0f} tok/s | eta {}\n",
               state.step, max_steps, mean_loss, std::exp(mean_loss), lr, ms_per_step, tok_s,
               format_duration(eta));
  }
  nlohmann::json line = {
      {"step", state.step},         {"loss", mean_loss},     {"lr", lr},
      {"ms_per_step", ms_per_step}, {"tokens_per_s", tok_s}, {"tokens_seen", state.tokens_seen}};
  if (state.skipped_steps > 0) line["skipped_steps"] = state.skipped_steps;
  // Memory so far: the process's peak resident size and the most tensor bytes live at once.
  line["peak_rss_mb"] = peak_rss_mb();
  if (const TensorBytes t = tensor_bytes(); t.counted) line["peak_tensor_mb"] = t.peak_bytes / 1e6;
  write_metrics(run, line);  // a NaN mean (all steps skipped) is written as null
  run.summary.last_loss = mean_loss;
  state.interval_loss_sum = 0.0;
  state.interval_steps = 0;
  state.interval_finite = 0;
  run.interval_start = Clock::now();
  run.interval_start_tokens = state.tokens_seen;
}

// Validates, records the result and keeps best.pt, then writes checkpoint.pt. Data-parallel:
// every rank validates its shard; all see the same totals, so all agree on `best`.
void validate_and_checkpoint(TrainRun& run) {
  TrainState& state = run.state;
  auto t0 = Clock::now();
  // Evaluation must not move the random stream that dropout draws from, or a run that
  // validates at step k (e.g. because it ends there) would diverge from one that does not.
  const torch::Tensor rng = run.generator.get_state();
  auto result = validation_loss(run.model, run.corpus.valid, run.config, run.dist,
                                run.root ? fmt::format("valid @ step {}", state.step) : "");
  run.generator.set_state(rng);
  run.model->train();
  const bool best = state.best_valid_ppl == 0.0 || result.ppl() < state.best_valid_ppl;
  if (best) state.best_valid_ppl = result.ppl();
  if (!run.root) {
    if (best) save_run(run, run.paths.best_checkpoint());
    save_run(run, run.paths.last_checkpoint());
    return;
  }
  fmt::print(stderr, "valid @ step {:>6} | ppl {:9.3f} | bpt {:6.4f} | {} tokens | {:.1f} s{}\n",
             state.step, result.ppl(), result.bpc(), result.tokens, seconds_since(t0),
             best ? " | best" : "");
  run.metrics->write({{"step", state.step},
                      {"valid_ppl", result.ppl()},
                      {"valid_nll", result.mean_nll()},
                      {"valid_tokens", result.tokens},
                      {"method", result.protocol}});
  if (best) save_run(run, run.paths.best_checkpoint());
  save_run(run, run.paths.last_checkpoint());
}

// The probes due at this step (rank 0 only), each a line of metrics.jsonl.
void run_probes_at_step(TrainRun& run) {
  for (const auto& line : run.probes.run(run.model, run.generator, run.state.step))
    write_metrics(run, line);
}

// The signal that asks the run to stop after this step (0: none); the test hook acts as
// SIGINT.
int requested_stop(TrainRun& run) {
  int stop = run.options.stop_signal ? run.options.stop_signal->load() : 0;
  if (contains(run.inject_stop, run.state.step)) stop = SIGINT;
  // Every rank stops after the same step, so the checkpoint holds one consistent state.
  stop = static_cast<int>(run.dist.max(stop));
  return stop;
}

// Checkpoints an interrupted run so that --resume continues it exactly.
void checkpoint_interrupted(TrainRun& run, int signal) {
  save_run(run, run.paths.last_checkpoint());
  run.summary.interrupted = true;
  run.summary.stop_signal = signal;
}

TrainSummary finish_run(TrainRun& run) {
  const double total = seconds_since(run.run_start);
  TrainSummary summary = run.summary;
  summary.steps = run.state.step;
  summary.best_valid_ppl = run.state.best_valid_ppl;
  summary.skipped_steps = run.state.skipped_steps;
  summary.train_tokens_per_s =
      static_cast<double>(run.state.tokens_seen - run.first_tokens) / std::max(total, 1e-9);
  return summary;
}

}  // namespace

TrainSummary train_model(const Config& config, const TrainOptions& options, Corpus corpus) {
  const auto& tc = config.train;
  // The ranks of one machine share its cores (train.threads = 0: an equal share each).
  const int threads = set_threads(tc.threads, options.dist->local_world_size());
  torch::manual_seed(static_cast<uint64_t>(tc.seed));
  // Parsed before anything is written, so a malformed hook leaves the run directory alone.
  std::vector<int64_t> inject_nan = env_steps("TXL_INJECT_NAN_AT_STEP");
  std::vector<int64_t> inject_stop = env_steps("TXL_INJECT_STOP_AT_STEP");
  const std::vector<int64_t> inject_kill = env_steps("TXL_INJECT_KILL_AT_STEP");
  const auto kill_rank = env_int("TXL_INJECT_KILL_RANK");
  const bool kill_here = !kill_rank || options.dist->rank() == *kill_rank;
  if (options.dist->is_root()) {
    save_or_check_vocab(config, options.run_dir, options.resume, corpus.vocab);
  }

  TrainRun run(config, options, corpus);  // the model draws its initial weights here
  if (options.init && !options.resume) {
    take_init_weights(*options.init, run.model);  // or takes them from --init-from's run
    if (run.root) {
      fmt::print(stderr, "init: weights from {} (step {}), fresh AdamW state, step 0\n",
                 options.init->checkpoint, options.init->step);
    }
  }
  prepare_device(run.device);
  run.inject_nan = std::move(inject_nan);
  run.inject_stop = std::move(inject_stop);
  start_run(run, threads);

  while (run.state.step < tc.max_steps) {
    if (kill_here && contains(inject_kill, run.state.step + 1)) {
      std::raise(SIGKILL);  // testing hook: dies as kill -9 would, mid-run, no checkpoint
    }
    const StepSnapshot before = snapshot_before_step(run);
    const StepOutcome step = forward_backward(run);
    if (step.finite) {
      apply_step(run, step);
    } else {
      handle_nonfinite(run, before, step);
    }
    finish_step(run, step);

    const bool at_end = run.state.step == tc.max_steps;
    if (run.state.step % tc.log_interval == 0 || at_end) log_progress(run, step.lr);
    if (run.root && run.probes.due(run.state.step)) run_probes_at_step(run);
    if ((tc.eval_interval > 0 && run.state.step % tc.eval_interval == 0) || at_end) {
      validate_and_checkpoint(run);
    }
    const int stop = requested_stop(run);
    if (stop != 0 && !at_end) {
      checkpoint_interrupted(run, stop);
      break;
    }
  }
  return finish_run(run);
}

}  // namespace txl
