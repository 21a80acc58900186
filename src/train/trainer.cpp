#include "txl/train/trainer.h"

#include <chrono>
#include <cmath>
#include <fstream>

#include <spdlog/fmt/fmt.h>

#include "txl/data/corpus.h"
#include "txl/eval/evaluate.h"
#include "txl/model/transformer.h"
#include "txl/platform/runtime.h"
#include "txl/train/batcher.h"
#include "txl/train/checkpoint.h"
#include "txl/train/run_dir.h"
#include "txl/train/schedule.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

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
  explicit MetricsLog(const std::string& path) : out_(path, std::ios::app) {
    if (!out_) throw std::runtime_error("cannot open " + path + " for writing");
  }
  void write(const nlohmann::json& j) { out_ << j.dump() << '\n' << std::flush; }

 private:
  std::ofstream out_;
};

EvalResult validate_model(TransformerLM& model, const std::vector<int32_t>& valid, const Config& c) {
  EvalRequest r;
  r.method = model->has_memory() && c.train.mem_len > 0 ? EvalMethod::kMemory : EvalMethod::kNonOverlap;
  r.length = c.train.tgt_len;
  r.mem_len = c.train.mem_len;
  r.streams = c.train.batch_size;
  r.batch_tokens = std::max<int64_t>(c.eval.batch_tokens, c.train.tgt_len);
  r.max_tokens = c.train.eval_max_tokens;
  r.precision = c.train.precision;
  return evaluate(model, valid, r);
}

}  // namespace

TrainSummary train_model(const Config& config, const TrainOptions& options) {
  const auto& tc = config.train;
  RunPaths paths{options.run_dir};
  const int threads = set_threads(tc.threads);
  torch::manual_seed(static_cast<uint64_t>(tc.seed));

  // Data: vocabulary from the training split only, saved with the run.
  auto t_load = Clock::now();
  Corpus corpus = load_corpus(config.data);
  fmt::print(stderr, "data: {} | vocab {} | train {} / valid {} / test {} tokens | {:.1f} s\n",
             config.data.dir, corpus.vocab.size(), corpus.train.size(), corpus.valid.size(),
             corpus.test.size(), seconds_since(t_load));
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
  Memory memory;
  if (options.resume) {
    auto loaded = load_checkpoint(paths.last_checkpoint(), model, &optimizer);
    state.step = loaded.state.step;
    state.tokens_seen = loaded.state.tokens_seen;
    state.best_valid_ppl = loaded.state.best_valid_ppl;
    batcher.set_position(loaded.state.stream_position);
    memory = std::move(loaded.memory);
    fmt::print(stderr, "resumed at step {} ({} tokens seen)\n", state.step, state.tokens_seen);
  }
  fmt::print(stderr, "model: {} parameters | {} | {} layers, d_model {}, {} heads x {} | threads {} | {}\n",
             count_parameters(*model), to_string(config.model.pos_encoding), config.model.n_layer,
             config.model.d_model, config.model.n_head, config.model.d_head, threads,
             to_string(tc.precision));

  MetricsLog metrics(paths.metrics());
  TrainSummary summary;
  const int64_t tokens_per_step = tc.batch_size * tc.tgt_len;
  double interval_loss = 0.0;
  int64_t interval_steps = 0;
  auto interval_start = Clock::now();
  auto run_start = Clock::now();
  const int64_t first_step = state.step;
  model->train();

  auto save = [&](const std::string& path) {
    state.stream_position = batcher.position();
    save_checkpoint(path, state, model, &optimizer, memory);
  };
  auto run_validation = [&]() {
    auto t0 = Clock::now();
    auto result = validate_model(model, corpus.valid, config);
    model->train();
    const bool best = state.best_valid_ppl == 0.0 || result.ppl() < state.best_valid_ppl;
    if (best) state.best_valid_ppl = result.ppl();
    fmt::print(stderr, "valid @ step {:>6} | ppl {:9.3f} | bpt {:6.4f} | {} tokens | {:.1f} s{}\n",
               state.step, result.ppl(), result.bpc(), result.tokens, seconds_since(t0),
               best ? " | best" : "");
    metrics.write({{"step", state.step}, {"valid_ppl", result.ppl()}, {"valid_nll", result.mean_nll()},
                   {"valid_tokens", result.tokens}, {"method", to_string(result.method)}});
    if (best) save(paths.best_checkpoint());
  };

  while (state.step < tc.max_steps) {
    const auto segment = batcher.next();
    if (segment.starts_epoch) memory = Memory{};
    const double lr = learning_rate(tc, state.step + 1);
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
      loss = out.nll.mean();
      memory = std::move(out.memory);
    }
    optimizer.zero_grad();
    loss.backward();
    double grad_norm = 0.0;
    if (tc.clip > 0) {
      grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), tc.clip);
    }
    const double loss_value = loss.item<double>();
    if (!std::isfinite(loss_value) || !std::isfinite(grad_norm)) {
      throw std::runtime_error(fmt::format(
          "step {}: loss {} / gradient norm {} is not finite; the last good checkpoint is {} "
          "(lower train.lr or raise train.warmup_steps, then resume)",
          state.step + 1, loss_value, grad_norm, paths.last_checkpoint()));
    }
    optimizer.step();
    state.step += 1;
    state.tokens_seen += segment.inputs.numel();
    interval_loss += loss_value;
    interval_steps += 1;

    if (state.step % tc.log_interval == 0 || state.step == tc.max_steps) {
      const double elapsed = seconds_since(interval_start);
      const double ms_per_step = 1000.0 * elapsed / interval_steps;
      const double tok_s = interval_steps * tokens_per_step / std::max(elapsed, 1e-9);
      const double mean_loss = interval_loss / interval_steps;
      const double done = state.step - first_step;
      const double eta = seconds_since(run_start) / done * (tc.max_steps - state.step);
      fmt::print(stderr,
                 "step {:>6}/{:<6} | loss {:7.4f} | ppl {:9.2f} | lr {:.2e} | {:7.1f} ms/step | "
                 "{:7.0f} tok/s | eta {}\n",
                 state.step, tc.max_steps, mean_loss, std::exp(mean_loss), lr, ms_per_step, tok_s,
                 format_duration(eta));
      metrics.write({{"step", state.step}, {"loss", mean_loss}, {"lr", lr},
                     {"ms_per_step", ms_per_step}, {"tokens_per_s", tok_s},
                     {"tokens_seen", state.tokens_seen}});
      summary.last_loss = mean_loss;
      interval_loss = 0.0;
      interval_steps = 0;
      interval_start = Clock::now();
    }
    const bool at_end = state.step == tc.max_steps;
    if ((tc.eval_interval > 0 && state.step % tc.eval_interval == 0) || at_end) {
      run_validation();
      save(paths.last_checkpoint());
    }
    if (options.stop_signal && options.stop_signal->load() != 0 && !at_end) {
      save(paths.last_checkpoint());
      summary.interrupted = true;
      break;
    }
  }
  const double total = seconds_since(run_start);
  summary.steps = state.step;
  summary.best_valid_ppl = state.best_valid_ppl;
  summary.train_tokens_per_s = (state.step - first_step) * tokens_per_step / std::max(total, 1e-9);
  return summary;
}

}  // namespace txl
