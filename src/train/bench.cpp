// The bench's runs: models trained on random tokens step by step, evaluations timed per
// protocol, the GEMM peak around them (bench.h; the results' arithmetic is bench_result.cpp).
#include "txl/train/bench.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/progress.h"
#include "txl/eval/protocol.h"
#include "txl/eval/request.h"
#include "txl/model/transformer.h"
#include "txl/platform/device.h"
#include "txl/platform/gemm_rate.h"
#include "txl/platform/onednn.h"
#include "txl/platform/process.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/train/adamw_step.h"
#include "txl/train/bench_progress.h"
#include "txl/train/grad_clip.h"
#include "txl/train/step_checks.h"
#include "txl/util/clock.h"
#include "txl/util/text.h"

namespace txl {

// Declared in bench.h: uniform ids, Zipf's for the adaptive softmax.
torch::Tensor bench_random_ids(const ModelConfig& model, int64_t vocab_size, int64_t n) {
  if (model.adaptive) {
    static thread_local torch::Tensor zipf;
    if (!zipf.defined() || zipf.size(0) != vocab_size) zipf = zipf_probabilities(vocab_size);
    return torch::multinomial(zipf, n, /*replacement=*/true);  // [n]
  }
  return torch::randint(vocab_size, {n}, torch::TensorOptions().dtype(torch::kLong));  // [n]
}

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

torch::ScalarType gemm_dtype(Precision precision) {
  return precision == Precision::kBf16 ? torch::kBFloat16 : torch::kFloat32;
}

torch::Tensor random_tokens(const BenchResult& r, const ModelConfig& model, int64_t vocab_size,
                            const torch::Device& device) {
  return bench_random_ids(model, vocab_size, r.batch * r.query_len)
      .view({r.batch, r.query_len})
      .to(device);  // [B, Q]
}

// The clock after the device has finished what was queued (GPUs run asynchronously).
Clock::time_point finished(const torch::Device& device) {
  synchronize(device);
  return Clock::now();
}

// One config's model with its optimizer, training memory and the timings taken so far.
struct BenchModel {
  Config config;
  BenchResult result;
  TransformerLM model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  Memory memory;
  StepPhases phases;                         // summed over the timed steps
  double train_cpu_ms = 0.0;                 // summed over the timed steps
  std::vector<std::vector<double>> eval_ms;  // per protocol of result.eval_rates
  std::vector<double> eval_cpu_ms;           // per protocol, summed over the repeats
  std::vector<EvalRequest> eval_requests;    // per protocol
  BenchProgress* progress = nullptr;         // the bench's progress lines; none if null
};

// The model of `config` (seeded as training seeds it), its optimizer and its FLOP count.
std::unique_ptr<BenchModel> make_bench_model(const Config& config, const BenchOptions& o) {
  const auto& tc = config.train;
  auto b = std::make_unique<BenchModel>();
  b->config = config;
  b->result = describe_bench(config, o);
  BenchResult& r = b->result;
  const torch::Device device = resolve_device(tc.device, "train.device");
  prepare_device(device);
  r.device = device.str();
  torch::manual_seed(static_cast<uint64_t>(tc.seed));
  b->model = make_model(config.model, o.vocab_size, device);
  r.parameters = count_parameters(*b->model);
  r.mem_len = b->model->has_memory() ? tc.mem_len : 0;
  r.flops = model_flops(config.model, o.vocab_size, r.batch, r.query_len, r.mem_len);
  b->optimizer = std::make_unique<torch::optim::AdamW>(
      b->model->parameters(), torch::optim::AdamWOptions(tc.lr).weight_decay(tc.weight_decay));
  b->model->train();
  return b;
}

// One training step on random tokens, as train_model (trainer.cpp) takes it: forward with
// the memory carried, backward, clipping, AdamW. With `timed`, its wall time, CPU time and
// phases are recorded.
// `step` (counted in its phase) is passed to the progress lines.
void train_step(BenchModel& b, const BenchOptions& o, bool timed, int64_t step = 0) {
  const auto& tc = b.config.train;
  const BenchResult& r = b.result;
  TransformerLM& model = b.model;
  const torch::Device device = model->device();
  const auto inputs = random_tokens(r, b.config.model, o.vocab_size, device);
  const auto targets = random_tokens(r, b.config.model, o.vocab_size, device);
  const double cpu0 = process_cpu_seconds();
  const auto t0 = finished(device);
  torch::Tensor loss;
  {
    AutocastGuard autocast(tc.precision, device);
    ForwardOptions fwd;
    fwd.targets = targets;
    fwd.keep_memory = r.mem_len;
    if (b.progress) {
      // The forward is about a third of a step; its layers tell how far it is.
      const double layers = static_cast<double>(std::max<int64_t>(b.config.model.n_layer, 1));
      fwd.progress = [&b, step, layers](double layers_done) {
        b.progress->steps_done(static_cast<double>(step) + layers_done / layers / 3.0);
      };
    }
    auto out = model->forward(inputs, b.memory, fwd);
    loss = out.nll.mean();
    b.memory = std::move(out.memory);
  }
  const auto t1 = finished(device);
  clear_gradients(model->parameters());
  loss.backward();
  const auto t2 = finished(device);
  if (tc.clip > 0) clip_gradients(model->parameters(), tc.clip);
  const double loss_value = loss.item<double>();
  TORCH_CHECK(std::isfinite(loss_value), "bench: loss is not finite");
  const auto t3 = Clock::now();
  adamw_step(*b.optimizer);
  const auto t4 = finished(device);
  if (b.progress) b.progress->steps_done(static_cast<double>(step + 1));
  if (!timed) return;
  b.train_cpu_ms += 1000.0 * (process_cpu_seconds() - cpu0);
  b.result.step_times_ms.push_back(ms_between(t0, t4));
  b.phases.forward_ms += ms_between(t0, t1);
  b.phases.backward_ms += ms_between(t1, t2);
  b.phases.clip_ms += ms_between(t2, t3);
  b.phases.optimizer_ms += ms_between(t3, t4);
}

// The training figures from the timed steps: mean, median and fastest step, tokens/s (from
// the mean, as a long run would see it), CPU time and phases per step.
void summarize_training(BenchModel& b) {
  BenchResult& r = b.result;
  const double steps = static_cast<double>(std::max<size_t>(r.step_times_ms.size(), 1));
  r.step_ms = TimingStats::of(r.step_times_ms);
  r.ms_per_step = r.step_ms.mean_ms;
  r.cpu_ms_per_step = b.train_cpu_ms / steps;
  r.train_tokens_per_s = r.batch * r.query_len / (r.ms_per_step / 1000.0);
  r.phases = {b.phases.forward_ms / steps, b.phases.backward_ms / steps, b.phases.clip_ms / steps,
              b.phases.optimizer_ms / steps};
}

// A random split for the evaluations: batch x tgt_len x steps scored tokens, drawn as the
// training steps' are (an adaptive run's evaluation on uniform ids would score most targets
// in the widest tail, the full softmax's cost, where text falls mostly in the head).
std::vector<int32_t> random_split(const BenchResult& r, const ModelConfig& model,
                                  const BenchOptions& o) {
  const int64_t n = r.batch * r.query_len * std::max<int64_t>(o.steps, 1) + 1;
  const auto t = bench_random_ids(model, o.vocab_size, n).to(torch::kInt);
  const int32_t* p = t.data_ptr<int32_t>();
  return std::vector<int32_t>(p, p + n);
}

// The protocols the bench times for this model, as `txl eval` would request them at
// L = tgt_len with the model's training settings: every one that applies (with
// o.all_protocols), else only the run's own (TrainingFit::kOwn: memory where the model
// carries memory, else nonoverlap).
std::vector<EvalRequest> bench_requests(const BenchModel& b, bool all_protocols) {
  const BenchResult& r = b.result;
  TrainConfig tc = b.config.train;
  tc.mem_len = r.mem_len;
  tc.batch_size = r.batch;
  std::vector<EvalRequest> out;
  for (const auto& protocol : eval_protocols()) {
    EvalSettings s;
    const TrainingFit fit = protocol.as_trained(tc, r.mem_len > 0, s.protocol_settings);
    if (fit == TrainingFit::kNotUsed || (!all_protocols && fit != TrainingFit::kOwn)) continue;
    s.protocol = protocol.name;
    s.precision = tc.precision;
    const EvalRequest request =
        make_eval_request(s, r.query_len, r.batch * r.query_len, training_length(b.config));
    if (!request_unavailable(b.config.model, request).empty()) continue;
    out.push_back(request);
  }
  return out;
}

// One evaluation of `ids` by `request`: wall ms; the CPU ms are added to `cpu_ms`.
double timed_evaluation(BenchModel& b, const std::vector<int32_t>& ids, const EvalRequest& request,
                        double& cpu_ms) {
  const torch::Device device = b.model->device();
  const double cpu0 = process_cpu_seconds();
  const auto t0 = finished(device);
  const int64_t tokens = request.max_tokens > 0
                             ? std::min<int64_t>(request.max_tokens, int64_t(ids.size()) - 1)
                             : int64_t(ids.size()) - 1;
  const EvalResult e =
      evaluate(b.model, ids, request,
               b.progress ? b.progress->evaluation(
                                request.protocol + " L=" + std::to_string(request.length), tokens)
                          : EvalProgressFn());
  const double ms = ms_between(t0, finished(device));
  cpu_ms += 1000.0 * (process_cpu_seconds() - cpu0);
  TORCH_CHECK(std::isfinite(e.nll) && e.tokens > 0, "bench: evaluation NLL is not finite");
  return ms;
}

// Every model's protocols, each warmed up on one pass, then timed o.eval_repeats times, the
// models and protocols alternated within each repeat.
void time_evaluations(const std::vector<BenchModel*>& models, const BenchOptions& o,
                      bool all_protocols) {
  if (models.empty()) return;
  const auto ids = random_split(models[0]->result, models[0]->config.model, o);
  for (BenchModel* b : models) {
    b->eval_requests = bench_requests(*b, all_protocols);
    b->eval_ms.assign(b->eval_requests.size(), {});
    b->eval_cpu_ms.assign(b->eval_requests.size(), 0.0);
    for (const auto& request : b->eval_requests) {
      EvalRequest one_pass = request;
      one_pass.max_tokens = b->result.batch * b->result.query_len;
      double ignored = 0.0;
      timed_evaluation(*b, ids, one_pass, ignored);
    }
  }
  for (int64_t repeat = 0; repeat < std::max<int64_t>(o.eval_repeats, 1); ++repeat) {
    for (BenchModel* b : models) {
      for (size_t p = 0; p < b->eval_requests.size(); ++p)
        b->eval_ms[p].push_back(timed_evaluation(*b, ids, b->eval_requests[p], b->eval_cpu_ms[p]));
    }
  }
  for (BenchModel* b : models) {
    BenchResult& r = b->result;
    const int64_t targets = static_cast<int64_t>(ids.size()) - 1;
    const double train_rate = r.median_step_tokens_per_s();
    for (size_t p = 0; p < b->eval_requests.size(); ++p) {
      const EvalRequest& request = b->eval_requests[p];
      const EvalProtocol& protocol = eval_protocol(request.protocol);
      EvalRate rate;
      rate.method = protocol.name;
      rate.setting = settings_text(protocol, request.settings);
      rate.tokens = targets;
      rate.passes = static_cast<int64_t>(protocol.plan(request, targets).passes.size());
      rate.ms = TimingStats::of(b->eval_ms[p]);
      rate.tokens_per_s = targets / (rate.ms.median_ms / 1000.0);
      rate.ratio_to_train = rate.tokens_per_s / train_rate;
      r.eval_rates.push_back(rate);
    }
    // The figures of the run's own protocol, per pass.
    const auto own = bench_requests(*b, /*all_protocols=*/false);
    r.primary_method = own.empty() ? "" : own.front().protocol;
    for (size_t p = 0; p < r.eval_rates.size(); ++p) {
      const EvalRate& rate = r.eval_rates[p];
      if (rate.method != r.primary_method) continue;
      const double passes = static_cast<double>(std::max<int64_t>(rate.passes, 1));
      r.eval_ms_per_pass = rate.ms.median_ms / passes;
      r.eval_cpu_ms_per_pass = b->eval_cpu_ms[p] / (rate.ms.count * passes);
      r.eval_tokens_per_s = rate.tokens_per_s;
    }
  }
}

// One more evaluation by the run's own protocol (BenchResult::primary_method),
// under the operator profiler.
void profile_evaluation(BenchModel& b, const BenchOptions& o) {
  BenchResult& r = b.result;
  const auto primary = bench_requests(b, /*all_protocols=*/false);
  if (primary.empty()) return;
  const auto ids = random_split(r, b.config.model, o);
  double cpu_ms = 0.0;
  OpProfiler profiler;
  r.eval_profiled_ms = timed_evaluation(b, ids, primary.front(), cpu_ms);
  r.eval_profile = profiler.stop();
  r.eval_profile_by_caller = profiler.by_caller();
}

}  // namespace

// The size n of the n^3 GEMM that gives the peak: large enough to fill the device.
int64_t gemm_peak_size(const Config& config) {
  return resolve_device(config.train.device, "train.device").is_cpu() ? 1024 : 8192;
}

// The GEMM peak at the bench's dtype.
double gemm_peak(const Config& config) {
  const torch::Device device = resolve_device(config.train.device, "train.device");
  return measure_gemm_gflops(gemm_dtype(config.train.precision), gemm_peak_size(config), 10,
                             device);
}

BenchResult run_bench(const Config& config, const BenchOptions& o) {
  // The measured peak is taken before and after the model runs, best of both: the machine
  // may be shared, and the ratio should not flatter the model.
  auto b = make_bench_model(config, o);
  const double peak_before = gemm_peak(config);
  BenchResult& r = b->result;
  r.onednn_direct = b->model->device().is_cpu() ? onednn_matmul_status() : "not used off the CPU";
  BenchProgress progress(o.progress_seconds);
  b->progress = &progress;
  const int64_t step_tokens = r.batch * r.query_len;
  progress.start_steps("warm-up", o.warmup, step_tokens);
  for (int64_t step = 0; step < o.warmup; ++step) train_step(*b, o, false, step);
  std::unique_ptr<OpProfiler> profiler;
  if (o.profile) profiler = std::make_unique<OpProfiler>();
  progress.start_steps("timed", o.steps, step_tokens);
  const auto timed_start = finished(b->model->device());
  for (int64_t step = 0; step < o.steps; ++step) train_step(*b, o, true, step);
  if (profiler) {
    r.profiled_ms = ms_between(timed_start, finished(b->model->device()));
    r.profile = profiler->stop();
    r.profile_by_caller = profiler->by_caller();
  }
  summarize_training(*b);
  time_evaluations({b.get()}, o, true);
  if (o.profile) profile_evaluation(*b, o);
  finish_result(r, std::max(peak_before, gemm_peak(config)), gemm_peak_size(config));
  return std::move(b->result);
}

std::vector<BenchResult> run_interleaved_bench(const std::vector<Config>& configs,
                                               const BenchOptions& o, int64_t rounds) {
  std::vector<std::unique_ptr<BenchModel>> models;
  std::vector<BenchModel*> all;
  for (const auto& config : configs) {
    models.push_back(make_bench_model(config, o));
    all.push_back(models.back().get());
  }
  if (configs.empty()) return {};
  const double peak_before = gemm_peak(configs.front());
  const std::string onednn = onednn_matmul_status();
  BenchProgress progress(o.progress_seconds);
  for (BenchModel* b : all) {
    b->progress = &progress;
    progress.start_steps("warm-up (" + b->result.pos_encoding + ")", o.warmup,
                         b->result.batch * b->result.query_len);
    for (int64_t step = 0; step < o.warmup; ++step) train_step(*b, o, false, step);
  }
  // The models' steps alternate: one step of the phase is a step of every model.
  const int64_t steps = o.steps * std::max<int64_t>(rounds, 1);
  progress.start_steps("timed (all models)", steps,
                       all.front()->result.batch * all.front()->result.query_len);
  for (int64_t step = 0; step < steps; ++step) {
    for (BenchModel* b : all) train_step(*b, o, true, step);
  }
  for (BenchModel* b : all) summarize_training(*b);
  time_evaluations(all, o, /*all_protocols=*/false);  // the primary one: the table's eval ms
  const double peak = std::max(peak_before, gemm_peak(configs.front()));
  std::vector<BenchResult> out;
  for (BenchModel* b : all) {
    b->result.onednn_direct = b->model->device().is_cpu() ? onednn : "not used off the CPU";
    b->result.steps = o.steps * std::max<int64_t>(rounds, 1);
    finish_result(b->result, peak, gemm_peak_size(configs.front()));
    out.push_back(std::move(b->result));
  }
  return out;
}

LongWindowResult run_long_window(const Config& config, int64_t vocab_size, int64_t length,
                                 int passes, double progress_seconds) {
  set_threads(config.train.threads);
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  LongWindowResult r;
  r.pos_encoding = to_string(config.model.pos_encoding);
  r.precision = to_string(config.train.precision);
  r.length = length;
  const torch::Device device = resolve_device(config.train.device, "train.device");
  prepare_device(device);
  TransformerLM model = make_model(config.model, vocab_size, device);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  const auto tokens = torch::randint(vocab_size, {1, length}, options);   // [1, L]
  const auto targets = torch::randint(vocab_size, {1, length}, options);  // [1, L]
  r.baseline_rss_mb = current_rss_mb();
  double best_ms = 1e300;
  BenchProgress progress(progress_seconds);
  progress.start_steps(fmt::format("long window of {} tokens", length), std::max(passes, 1), length,
                       "pass");
  const double layers = static_cast<double>(std::max<int64_t>(config.model.n_layer, 1));
  for (int p = 0; p < std::max(passes, 1); ++p) {
    const auto t0 = Clock::now();
    AutocastGuard autocast(config.train.precision, device);
    ForwardOptions fwd;
    fwd.targets = targets;
    fwd.progress = [&progress, p, layers](double layers_done) {
      progress.steps_done(static_cast<double>(p) + layers_done / layers);
    };
    auto out = model->forward(tokens, Memory{}, fwd);
    const double nll = out.nll.sum().item<double>();
    TORCH_CHECK(std::isfinite(nll), "long window: NLL is not finite");
    best_ms = std::min(best_ms, ms_between(t0, Clock::now()));
  }
  r.peak_rss_mb = peak_rss_mb();
  r.growth_mb = r.peak_rss_mb - r.baseline_rss_mb;
  r.eval_ms = best_ms;
  r.tokens_per_s = static_cast<double>(length) / (best_ms / 1000.0);
  return r;
}

}  // namespace txl
