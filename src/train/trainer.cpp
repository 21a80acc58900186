#include "txl/train/trainer.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "txl/data/corpus.h"
#include "txl/eval/evaluate.h"
#include "txl/model/transformer.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/run/checkpoint.h"
#include "txl/run/run_dir.h"
#include "txl/train/batcher.h"
#include "txl/train/memory_estimate.h"
#include "txl/train/schedule.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"
#include "txl/util/parse.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::max(0.0, seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
    if (!out_) throw std::runtime_error("cannot open " + path + " for writing");
  }
  void write(const nlohmann::json& j) {
    out_ << j.dump() << '\n' << std::flush;
    // A full disk must stop the run loudly, not lose the metrics silently.
    if (!out_) throw std::runtime_error("cannot write " + path_ + " (disk full?)");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

// Keeps only the metrics lines up to `step`: a run killed after logging step s but before its
// next checkpoint (at c < s) would otherwise log steps c+1..s twice once resumed from c. A
// line cut short by the kill is dropped too.
void truncate_metrics(const std::string& path, int64_t step) {
  if (!is_regular_file(path)) return;
  std::ifstream in(path, std::ios::binary);
  std::string line, kept;
  bool dropped = false;
  while (std::getline(in, line)) {
    bool keep = false;
    try {
      const auto j = nlohmann::json::parse(line);
      keep = j.is_object() && j.contains("step") && j.at("step").is_number_integer() &&
             j.at("step").get<int64_t>() <= step;
    } catch (const std::exception&) {
      keep = false;
    }
    if (keep) {
      kept += line + "\n";
    } else {
      dropped = true;
    }
  }
  if (dropped) write_file_atomic(path, kept);
}

// TXL_INJECT_NAN_AT_STEP / TXL_INJECT_STOP_AT_STEP: the testing hooks described in trainer.h.
std::vector<int64_t> injected_steps(const char* name) {
  const char* env = std::getenv(name);
  std::vector<int64_t> steps;
  if (env == nullptr || *env == '\0') return steps;
  if (parse_positive_integers(env, steps)) {
    throw InputError(std::string(name) + "=" + env +
                     ": expected step numbers >= 1 separated by commas");
  }
  return steps;
}

// The global L2 norm of the gradients, without clipping them (train.clip = 0): the non-finite
// check must see NaN gradients behind a finite loss too.
double total_grad_norm(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : parameters) {
    if (p.grad().defined()) norms.push_back(p.grad().norm());  // [] each
  }
  if (norms.empty()) return 0.0;
  return torch::stack(norms).norm().item<double>();
}

bool all_finite(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (t.defined() && !torch::isfinite(t).all().item<bool>()) return false;
  }
  return true;
}

EvalResult validate_model(TransformerLM& model, const std::vector<int32_t>& valid,
                          const Config& c) {
  EvalRequest r;
  r.method =
      model->has_memory() && c.train.mem_len > 0 ? EvalMethod::kMemory : EvalMethod::kNonOverlap;
  r.length = c.train.tgt_len;
  r.mem_len = c.train.mem_len;
  r.streams = c.train.batch_size;
  r.batch_tokens = std::max<int64_t>(c.eval.batch_tokens, c.train.tgt_len);
  r.max_tokens = c.train.eval_max_tokens;
  r.precision = c.train.precision;
  return evaluate(model, valid, r);
}

// The checkpoint must continue this very run: same configuration (up to the resumable
// keys), same vocabulary, same training tokens.
void check_resume_matches(const TrainState& saved, const TrainState& now, const RunPaths& paths) {
  const std::string ckpt = paths.last_checkpoint();
  const auto diffs = config_differences(saved.config, now.config, resumable_keys());
  if (!diffs.empty()) {
    throw InputError(ckpt + ": the checkpoint was written with a different configuration than " +
                     paths.config() + " (checkpoint vs now: " + join(diffs, "; ") +
                     "); on resume only " + join(resumable_keys(), ", ") + " may change");
  }
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

}  // namespace

const std::vector<std::string>& resumable_keys() {
  static const std::vector<std::string> keys = {
      "train.max_steps",
      "train.log_interval",
      "train.eval_interval",
      "train.eval_max_tokens",
      "train.threads",
      "train.skip_nonfinite",
      "data.dir",
      "eval.lengths",
      "eval.split",
      "eval.batch_tokens",
  };
  return keys;
}

Corpus load_training_data(const Config& config) {
  auto t_load = Clock::now();
  Corpus corpus = load_corpus(config.data);
  fmt::print(stderr, "data: {} | vocab {} | train {} / valid {} / test {} tokens | {:.1f} s\n",
             config.data.dir, corpus.vocab.size(), corpus.train.size(), corpus.valid.size(),
             corpus.test.size(), seconds_since(t_load));
  const auto& tc = config.train;
  check_training_streams(static_cast<int64_t>(corpus.train.size()), tc.batch_size, tc.tgt_len);
  check_training_memory(estimate_training_memory(config, corpus.vocab.size(), tc.tgt_len),
                        available_memory_bytes());
  return corpus;
}

TrainSummary train_model(const Config& config, const TrainOptions& options, Corpus corpus) {
  const auto& tc = config.train;
  RunPaths paths{options.run_dir};
  const int threads = set_threads(tc.threads);
  torch::manual_seed(static_cast<uint64_t>(tc.seed));
  const std::vector<int64_t> inject_nan = injected_steps("TXL_INJECT_NAN_AT_STEP");
  const std::vector<int64_t> inject_stop = injected_steps("TXL_INJECT_STOP_AT_STEP");

  // The vocabulary (from the training split only) is saved with the run.
  if (options.resume) {
    const Vocab saved = Vocab::load(paths.vocab());
    if (!(saved == corpus.vocab)) {
      throw InputError(paths.vocab() + ": the corpus in " + config.data.dir +
                       " now gives a different vocabulary; cannot resume");
    }
  } else {
    corpus.vocab.save(paths.vocab());
    write_file_atomic(paths.config(), config_to_json(config).dump(2) + "\n");
  }

  TransformerLM model(config.model, corpus.vocab.size());
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(tc.lr).weight_decay(tc.weight_decay));
  StreamBatcher batcher(corpus.train, tc.batch_size, tc.tgt_len);
  TrainState state;
  state.config = config_to_json(config);
  state.vocab_checksum = corpus.vocab.checksum();
  state.train_tokens = static_cast<int64_t>(corpus.train.size());
  state.train_checksum = xxh64(corpus.train.data(), corpus.train.size() * sizeof(int32_t));
  Memory memory;
  if (options.resume) {
    auto loaded = load_checkpoint(paths.last_checkpoint(), model, &optimizer);
    check_resume_matches(loaded.state, state, paths);
    const TrainState& s = loaded.state;
    restore_progress(state, s);
    if (s.stream_position >= batcher.stream_len() - 1) {
      throw InputError(paths.last_checkpoint() + ": stream position " +
                       std::to_string(s.stream_position) + " lies outside the training streams (" +
                       std::to_string(batcher.stream_len()) + " tokens each)");
    }
    batcher.set_position(s.stream_position);
    memory = std::move(loaded.memory);
    bool memory_fits =
        memory.empty() || static_cast<int64_t>(memory.layers.size()) == config.model.n_layer;
    for (const auto& layer : memory.layers) {
      memory_fits = memory_fits && layer.dim() == 3 && layer.size(0) == tc.batch_size &&
                    layer.size(2) == config.model.d_model;  // [B, M, C]
    }
    if (!memory_fits) {
      throw InputError(paths.last_checkpoint() + ": the saved memory does not fit " +
                       std::to_string(config.model.n_layer) + " layers x " +
                       std::to_string(tc.batch_size) + " streams x d_model " +
                       std::to_string(config.model.d_model));
    }
    truncate_metrics(paths.metrics(), state.step);
    // Only now that the checkpoint fits: config.json takes the new values of the resumable
    // keys (train.max_steps), which a later --resume must see.
    write_file_atomic(paths.config(), config_to_json(config).dump(2) + "\n");
    fmt::print(stderr, "resumed at step {} ({} tokens seen)\n", state.step, state.tokens_seen);
  }
  fmt::print(stderr,
             "model: {} parameters | {} | {} layers, d_model {}, {} heads x {} | threads {} | {}\n",
             count_parameters(*model), to_string(config.model.pos_encoding), config.model.n_layer,
             config.model.d_model, config.model.n_head, config.model.d_head, threads,
             to_string(tc.precision));

  MetricsLog metrics(paths.metrics());
  TrainSummary summary;
  const int64_t tokens_per_step = tc.batch_size * tc.tgt_len;
  auto interval_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(state.interval_seconds));
  auto run_start = Clock::now();
  const int64_t first_step = state.step;
  int64_t consecutive_skips = 0;
  auto generator = at::detail::getDefaultCPUGenerator();
  model->train();

  auto save = [&](const std::string& path) {
    state.stream_position = batcher.position();
    state.interval_seconds = seconds_since(interval_start);
    try {
      save_checkpoint(path, state, model, &optimizer, memory);
    } catch (const std::exception& e) {
      // write_file_atomic removed its temporary: the previous checkpoint is untouched.
      throw std::runtime_error(fmt::format(
          "step {}: {}; the previous checkpoints are intact. Free space (or fix the cause) "
          "and continue with: txl train --resume {}",
          state.step, e.what(), options.run_dir));
    }
  };
  auto run_validation = [&]() {
    auto t0 = Clock::now();
    // Evaluation must not move the random stream that dropout draws from, or a run that
    // validates at step k (e.g. because it ends there) would diverge from one that does not.
    const torch::Tensor rng = generator.get_state();
    auto result = validate_model(model, corpus.valid, config);
    generator.set_state(rng);
    model->train();
    const bool best = state.best_valid_ppl == 0.0 || result.ppl() < state.best_valid_ppl;
    if (best) state.best_valid_ppl = result.ppl();
    fmt::print(stderr, "valid @ step {:>6} | ppl {:9.3f} | bpt {:6.4f} | {} tokens | {:.1f} s{}\n",
               state.step, result.ppl(), result.bpc(), result.tokens, seconds_since(t0),
               best ? " | best" : "");
    metrics.write({{"step", state.step},
                   {"valid_ppl", result.ppl()},
                   {"valid_nll", result.mean_nll()},
                   {"valid_tokens", result.tokens},
                   {"method", to_string(result.method)}});
    if (best) save(paths.best_checkpoint());
  };

  while (state.step < tc.max_steps) {
    // The state before this step, written as the last good checkpoint if the step turns out
    // non-finite. Memory is replaced, never modified in place, so a copy of the handles is a
    // snapshot.
    const int64_t position_before = batcher.position();
    const Memory memory_before = memory;
    const torch::Tensor rng_before = generator.get_state();
    const int64_t this_step = state.step + 1;

    const auto segment = batcher.next();
    if (segment.starts_epoch) memory = Memory{};
    const double lr = learning_rate(tc, this_step);
    for (auto& group : optimizer.param_groups()) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }

    torch::Tensor loss;
    {
      AutocastGuard autocast(tc.precision);
      ForwardOptions fwd;
      fwd.targets = segment.targets;
      fwd.keep_memory = model->has_memory() ? tc.mem_len : 0;
      auto out = model->forward(segment.inputs, memory, fwd);
      loss = out.nll.mean();  // []
      memory = std::move(out.memory);
    }
    if (std::find(inject_nan.begin(), inject_nan.end(), this_step) != inject_nan.end()) {
      loss = loss * std::numeric_limits<float>::quiet_NaN();
    }
    optimizer.zero_grad();
    loss.backward();
    const double grad_norm = tc.clip > 0
                                 ? torch::nn::utils::clip_grad_norm_(model->parameters(), tc.clip)
                                 : total_grad_norm(model->parameters());
    const double loss_value = loss.item<double>();
    const bool finite = std::isfinite(loss_value) && std::isfinite(grad_norm);

    if (!finite) {
      if (!tc.skip_nonfinite || consecutive_skips >= kMaxConsecutiveSkips) {
        // Weights and optimizer are untouched by this step; rewind data, memory and RNG too
        // and the state is exactly that after the previous (finite) step.
        batcher.set_position(position_before);
        memory = memory_before;
        generator.set_state(rng_before);
        std::string where;
        if (all_finite(model->parameters()) && all_finite(memory.layers)) {
          save(paths.last_checkpoint());
          where = fmt::format("{} holds step {}, the last finite state", paths.last_checkpoint(),
                              state.step);
        } else {
          where = is_regular_file(paths.last_checkpoint())
                      ? "the weights are no longer finite; " + paths.last_checkpoint() +
                            " holds the last good state"
                      : "the weights are no longer finite and no checkpoint was written yet";
        }
        const std::string why =
            consecutive_skips >= kMaxConsecutiveSkips
                ? fmt::format("{} consecutive non-finite steps were skipped, giving up",
                              consecutive_skips)
                : "training stopped";
        throw std::runtime_error(fmt::format(
            "step {}: loss {} / gradient norm {} is not finite; {}. {}. To continue: txl train "
            "--resume {} --set train.skip_nonfinite=true (skips such steps), or start again "
            "with a lower train.lr or longer train.warmup_steps",
            this_step, loss_value, grad_norm, why, where, options.run_dir));
      }
      // Skip: no update. A memory computed by a non-finite forward would poison the segments
      // after it, so it is dropped.
      consecutive_skips += 1;
      state.skipped_steps += 1;
      if (!all_finite(memory.layers)) memory = Memory{};
      fmt::print(stderr,
                 "step {:>6}: loss {} / gradient norm {} is not finite; skipped ({} so far)\n",
                 this_step, loss_value, grad_norm, state.skipped_steps);
      metrics.write(
          {{"step", this_step}, {"nonfinite", true}, {"skipped_steps", state.skipped_steps}});
    } else {
      consecutive_skips = 0;
      optimizer.step();
      state.interval_loss_sum += loss_value;
      state.interval_finite += 1;
    }
    state.step = this_step;
    state.tokens_seen += segment.inputs.numel();
    state.lr = lr;
    state.interval_steps += 1;

    if (state.step % tc.log_interval == 0 || state.step == tc.max_steps) {
      const double elapsed = seconds_since(interval_start);
      const double ms_per_step = 1000.0 * elapsed / state.interval_steps;
      const double tok_s = state.interval_steps * tokens_per_step / std::max(elapsed, 1e-9);
      const double mean_loss = state.interval_finite > 0
                                   ? state.interval_loss_sum / state.interval_finite
                                   : std::numeric_limits<double>::quiet_NaN();
      const double done = state.step - first_step;
      const double eta = seconds_since(run_start) / done * (tc.max_steps - state.step);
      fmt::print(stderr,
                 "step {:>6}/{:<6} | loss {:7.4f} | ppl {:9.2f} | lr {:.2e} | {:7.1f} ms/step | "
                 "{:7.0f} tok/s | eta {}\n",
                 state.step, tc.max_steps, mean_loss, std::exp(mean_loss), lr, ms_per_step, tok_s,
                 format_duration(eta));
      nlohmann::json line = {{"step", state.step},
                             {"loss", mean_loss},
                             {"lr", lr},
                             {"ms_per_step", ms_per_step},
                             {"tokens_per_s", tok_s},
                             {"tokens_seen", state.tokens_seen}};
      if (state.skipped_steps > 0) line["skipped_steps"] = state.skipped_steps;
      metrics.write(line);  // a NaN mean (all steps skipped) is written as null
      summary.last_loss = mean_loss;
      state.interval_loss_sum = 0.0;
      state.interval_steps = 0;
      state.interval_finite = 0;
      interval_start = Clock::now();
    }
    const bool at_end = state.step == tc.max_steps;
    if ((tc.eval_interval > 0 && state.step % tc.eval_interval == 0) || at_end) {
      run_validation();
      save(paths.last_checkpoint());
    }
    int stop = options.stop_signal ? options.stop_signal->load() : 0;
    if (std::find(inject_stop.begin(), inject_stop.end(), state.step) != inject_stop.end()) {
      stop = SIGINT;
    }
    if (stop != 0 && !at_end) {
      save(paths.last_checkpoint());
      summary.interrupted = true;
      summary.stop_signal = stop;
      break;
    }
  }
  const double total = seconds_since(run_start);
  summary.steps = state.step;
  summary.best_valid_ppl = state.best_valid_ppl;
  summary.skipped_steps = state.skipped_steps;
  summary.train_tokens_per_s = (state.step - first_step) * tokens_per_step / std::max(total, 1e-9);
  return summary;
}

}  // namespace txl
