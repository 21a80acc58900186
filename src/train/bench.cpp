#include "txl/train/bench.h"

#include <spdlog/fmt/fmt.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "txl/config/encodings.h"
#include "txl/model/transformer.h"
#include "txl/platform/device.h"
#include "txl/platform/gemm_rate.h"
#include "txl/platform/onednn.h"
#include "txl/platform/process.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/train/adamw_step.h"
#include "txl/train/step_checks.h"

namespace txl {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

torch::ScalarType gemm_dtype(Precision precision) {
  return precision == Precision::kBf16 ? torch::kBFloat16 : torch::kFloat32;
}

}  // namespace

FlopCount model_flops(const ModelConfig& m, int64_t vocab_size, int64_t batch, int64_t query_len,
                      int64_t mem_len) {
  const double L = m.n_layer, C = m.d_model, H = m.n_head, D = m.d_head, F = m.d_inner;
  const double V = vocab_size, B = batch, Q = query_len, M = mem_len, K = M + Q;
  // Multiply-accumulates per token; see the formula in bench.h.
  const double n = L * (4 * C * H * D + 2 * C * F) + C * V;
  const double attn = L * 2 * H * D * K;
  // The encoding's own work, per layer, from its traits (config/encodings.cpp).
  const PositionCost cost = encoding_traits(m.pos_encoding).cost(m, B, Q, K);
  const double pos = L * cost.score, proj = L * cost.table, proj_train_flops = cost.table_train;
  const double kv_mem = L * 2 * C * H * D * M / Q;
  FlopCount f;
  f.matmul_params = n;
  f.eval_per_token = 2 * (n + attn + pos + kv_mem + proj);
  f.train_per_token = 6 * (n + attn + pos) + 4 * kv_mem + proj_train_flops * proj;
  f.formula = fmt::format(
      "train = 6*(N + attn + pos) + 4*kv_mem + {:.0f}*proj, eval = 2*(N + attn + pos + kv_mem + "
      "proj); "
      "MACs/token: N = L*(4*C*H*D + 2*C*F) + C*V = {:.0f}, attn = L*2*H*D*K = {:.0f}, "
      "pos = L*H*D*K = {:.0f}, kv_mem = L*2*C*H*D*M/Q = {:.0f}, proj = {:.0f} "
      "(L={} C={} H={} D={} F={} V={} B={} Q={} M={} K={})",
      proj_train_flops, n, attn, pos, kv_mem, proj, m.n_layer, m.d_model, m.n_head, m.d_head,
      m.d_inner, vocab_size, batch, query_len, mem_len, mem_len + query_len);
  return f;
}

nlohmann::json BenchResult::to_json() const {
  nlohmann::json j = {
      {"device", device},
      {"cpu_model", cpu_model},
      {"cpu_flags", cpu_flags},
      {"bf16_support", bf16_support},
      {"precision", precision},
      {"threads", threads},
      {"pos_encoding", pos_encoding},
      {"parameters", parameters},
      {"vocab_size", vocab_size},
      {"batch_size", batch},
      {"tgt_len", query_len},
      {"mem_len", mem_len},
      {"steps", steps},
      {"warmup", warmup},
      {"ms_per_step", ms_per_step},
      {"cpu_ms_per_step", cpu_ms_per_step},
      {"train_tokens_per_s", train_tokens_per_s},
      {"eval_ms_per_pass", eval_ms_per_pass},
      {"eval_cpu_ms_per_pass", eval_cpu_ms_per_pass},
      {"eval_tokens_per_s", eval_tokens_per_s},
      {"peak_rss_mb", peak_rss_mb},
      {"matmul_params", flops.matmul_params},
      {"flops_per_token", flops.train_per_token},
      {"eval_flops_per_token", flops.eval_per_token},
      {"flops_formula", flops.formula},
      {"achieved_gflops", achieved_gflops},
      {"eval_achieved_gflops", eval_achieved_gflops},
      {"gemm_peak_gflops", gemm_peak_gflops},
      {"onednn_direct", onednn_direct},
      {"mfu", mfu},
      {"eval_mfu", eval_mfu},
      {"load_average", load_average},
      {"phases_ms",
       {{"forward", phases.forward_ms},
        {"backward", phases.backward_ms},
        {"clip", phases.clip_ms},
        {"optimizer", phases.optimizer_ms}}},
  };
  if (!profile.empty()) {
    auto rows = nlohmann::json::array();
    for (const auto& op : profile) {
      rows.push_back({{"name", op.name},
                      {"calls", op.calls},
                      {"self_ms", op.self_ms},
                      {"total_ms", op.total_ms}});
    }
    j["profile"] = {{"profiled_ms", profiled_ms}, {"ops", rows}};
  }
  return j;
}

namespace {

// The machine and the shapes: what every bench result starts with.
BenchResult describe_bench(const Config& config, const BenchOptions& o) {
  const auto& tc = config.train;
  BenchResult r;
  r.threads = set_threads(tc.threads);
  const CpuFlags cpu = detect_cpu_flags();
  r.cpu_model = cpu_model_name();
  r.cpu_flags = to_string(cpu);
  r.bf16_support = to_string(plan_cpu(cpu, {}).bf16);
  r.precision = to_string(tc.precision);
  r.pos_encoding = to_string(config.model.pos_encoding);
  r.vocab_size = o.vocab_size;
  r.batch = tc.batch_size;
  r.query_len = tc.tgt_len;
  r.steps = o.steps;
  r.warmup = o.warmup;
  return r;
}

torch::Tensor random_tokens(const BenchResult& r, int64_t vocab_size, const torch::Device& device) {
  return torch::randint(vocab_size, {r.batch, r.query_len},
                        torch::TensorOptions().dtype(torch::kLong).device(device));  // [B, Q]
}

// The clock after the device has finished what was queued (GPUs run asynchronously).
Clock::time_point finished(const torch::Device& device) {
  synchronize(device);
  return Clock::now();
}

// One training step on random tokens, as train_model (trainer.cpp) takes it: forward with
// the memory carried, backward, clipping, AdamW; adds each phase's wall time to `total`.
void timed_step(TransformerLM& model, torch::optim::AdamW& optimizer, const Config& config,
                const BenchOptions& o, const BenchResult& r, Memory& memory, StepPhases& total) {
  const auto& tc = config.train;
  const torch::Device device = model->device();
  const auto inputs = random_tokens(r, o.vocab_size, device);
  const auto targets = random_tokens(r, o.vocab_size, device);
  const auto t0 = finished(device);
  torch::Tensor loss;
  {
    AutocastGuard autocast(tc.precision, device);
    ForwardOptions fwd;
    fwd.targets = targets;
    fwd.keep_memory = r.mem_len;
    auto out = model->forward(inputs, memory, fwd);
    loss = out.nll.mean();
    memory = std::move(out.memory);
  }
  const auto t1 = finished(device);
  clear_gradients(model->parameters());
  loss.backward();
  const auto t2 = finished(device);
  if (tc.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), tc.clip);
  const double loss_value = loss.item<double>();
  TORCH_CHECK(std::isfinite(loss_value), "bench: loss is not finite");
  const auto t3 = Clock::now();
  adamw_step(optimizer);
  const auto t4 = finished(device);
  total.forward_ms += ms_between(t0, t1);
  total.backward_ms += ms_between(t1, t2);
  total.clip_ms += ms_between(t2, t3);
  total.optimizer_ms += ms_between(t3, t4);
}

// Training: warm-up steps, then timed ones; fills the per-step times, tokens/s and (with
// o.profile) the operator profile.
void time_training(TransformerLM& model, const Config& config, const BenchOptions& o,
                   BenchResult& r) {
  const auto& tc = config.train;
  const torch::Device device = model->device();
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(tc.lr).weight_decay(tc.weight_decay));
  model->train();
  Memory memory;
  StepPhases total;
  for (int64_t step = 0; step < o.warmup; ++step)
    timed_step(model, optimizer, config, o, r, memory, total);
  total = StepPhases{};
  std::unique_ptr<OpProfiler> profiler;
  if (o.profile) profiler = std::make_unique<OpProfiler>();
  const auto timed_start = finished(device);
  const double cpu_start = process_cpu_seconds();
  for (int64_t step = 0; step < o.steps; ++step)
    timed_step(model, optimizer, config, o, r, memory, total);
  const double train_ms = ms_between(timed_start, finished(device));
  const double train_cpu_ms = 1000.0 * (process_cpu_seconds() - cpu_start);
  if (profiler) {
    r.profile = profiler->stop();
    r.profile_by_caller = profiler->by_caller();
    r.profiled_ms = train_ms;
  }
  const double steps = static_cast<double>(std::max<int64_t>(o.steps, 1));
  r.ms_per_step = train_ms / steps;
  r.cpu_ms_per_step = train_cpu_ms / steps;
  r.train_tokens_per_s = steps * r.batch * r.query_len / (train_ms / 1000.0);
  r.phases = {total.forward_ms / steps, total.backward_ms / steps, total.clip_ms / steps,
              total.optimizer_ms / steps};
}

// Evaluation: forward passes with memory, as the `memory` evaluation method runs them.
void time_evaluation(TransformerLM& model, const Config& config, const BenchOptions& o,
                     BenchResult& r) {
  const auto& tc = config.train;
  const double steps = static_cast<double>(std::max<int64_t>(o.steps, 1));
  const torch::Device device = model->device();
  {
    model->eval();
    torch::NoGradGuard no_grad;
    Memory eval_memory;
    auto eval_pass = [&] {
      AutocastGuard autocast(tc.precision, device);
      ForwardOptions fwd;
      fwd.targets = random_tokens(r, o.vocab_size, device);
      fwd.keep_memory = r.mem_len;
      auto out = model->forward(random_tokens(r, o.vocab_size, device), eval_memory, fwd);
      eval_memory = std::move(out.memory);
      return out.nll.sum().item<double>();
    };
    eval_pass();  // warm-up; also fills the memory
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_seconds();
    for (int64_t i = 0; i < o.steps; ++i) eval_pass();
    const double eval_ms = ms_between(t0, Clock::now());
    r.eval_ms_per_pass = eval_ms / steps;
    r.eval_cpu_ms_per_pass = 1000.0 * (process_cpu_seconds() - cpu0) / steps;
    r.eval_tokens_per_s = steps * r.batch * r.query_len / (eval_ms / 1000.0);
    model->train();
  }
}

}  // namespace

BenchResult run_bench(const Config& config, const BenchOptions& o) {
  const auto& tc = config.train;
  BenchResult r = describe_bench(config, o);
  const torch::Device device = resolve_device(tc.device, "train.device");
  prepare_device(device);
  r.device = device.str();
  torch::manual_seed(static_cast<uint64_t>(tc.seed));
  TransformerLM model = make_model(config.model, o.vocab_size, device);
  r.parameters = count_parameters(*model);
  r.mem_len = model->has_memory() ? tc.mem_len : 0;
  r.flops = model_flops(config.model, o.vocab_size, r.batch, r.query_len, r.mem_len);
  // The measured peak is taken before and after the model runs, best of both: the machine
  // may be shared, and the ratio should not flatter the model.
  const auto dtype = gemm_dtype(tc.precision);
  const int64_t gemm_n = device.is_cpu() ? 1024 : 8192;  // large enough to fill a GPU
  r.gemm_peak_gflops = measure_gemm_gflops(dtype, gemm_n, 10, device);
  r.onednn_direct = device.is_cpu() ? onednn_matmul_status() : "not used off the CPU";
  time_training(model, config, o, r);
  time_evaluation(model, config, o, r);
  r.peak_rss_mb = peak_rss_mb();
  r.gemm_peak_gflops = std::max(r.gemm_peak_gflops, measure_gemm_gflops(dtype, gemm_n, 10, device));
  r.achieved_gflops = r.flops.train_per_token * r.train_tokens_per_s / 1e9;
  r.eval_achieved_gflops = r.flops.eval_per_token * r.eval_tokens_per_s / 1e9;
  r.mfu = r.achieved_gflops / r.gemm_peak_gflops;
  r.eval_mfu = r.eval_achieved_gflops / r.gemm_peak_gflops;
  r.load_average = load_average();
  return r;
}

nlohmann::json LongWindowResult::to_json() const {
  return {{"pos_encoding", pos_encoding},
          {"precision", precision},
          {"length", length},
          {"eval_ms", eval_ms},
          {"tokens_per_s", tokens_per_s},
          {"baseline_rss_mb", baseline_rss_mb},
          {"peak_rss_mb", peak_rss_mb},
          {"growth_mb", growth_mb}};
}

LongWindowResult LongWindowResult::from_json(const nlohmann::json& j) {
  LongWindowResult r;
  r.pos_encoding = j.at("pos_encoding").get<std::string>();
  r.precision = j.at("precision").get<std::string>();
  r.length = j.at("length").get<int64_t>();
  r.eval_ms = j.at("eval_ms").get<double>();
  r.tokens_per_s = j.at("tokens_per_s").get<double>();
  r.baseline_rss_mb = j.at("baseline_rss_mb").get<double>();
  r.peak_rss_mb = j.at("peak_rss_mb").get<double>();
  r.growth_mb = j.at("growth_mb").get<double>();
  return r;
}

LongWindowResult run_long_window(const Config& config, int64_t vocab_size, int64_t length,
                                 int passes) {
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
  for (int p = 0; p < std::max(passes, 1); ++p) {
    const auto t0 = Clock::now();
    AutocastGuard autocast(config.train.precision, device);
    ForwardOptions fwd;
    fwd.targets = targets;
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
