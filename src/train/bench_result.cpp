// The bench's results as numbers and JSON: the FLOP count of bench.h's formula, timing
// statistics, and the JSON of every result type.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/encodings.h"
#include "txl/model/adaptive_softmax.h"
#include "txl/platform/cpu.h"
#include "txl/platform/process.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/train/bench.h"

namespace txl {

torch::Tensor zipf_probabilities(int64_t vocab_size) {
  auto p = 1.0 / torch::arange(1, vocab_size + 1, torch::kDouble);  // [V]
  return p / p.sum();
}

double output_macs(const ModelConfig& m, int64_t vocab_size) {
  const double C = m.d_model;
  if (!m.adaptive) return C * static_cast<double>(vocab_size);
  const ClusterLayout layout = cluster_layout(*m.adaptive, m.d_model, vocab_size);
  const auto p = zipf_probabilities(vocab_size);
  double macs = 0;
  for (int64_t i = 0; i < layout.clusters(); ++i) {
    // The tokens in cluster i.
    const double share = p.slice(0, layout.bounds[i], layout.bounds[i + 1]).sum().item<double>();
    const double d = static_cast<double>(layout.widths[i]);
    const double proj = layout.projected ? C * d : 0.0;
    macs += share * proj;  // the input's projection of cluster i
    if (i == 0) {
      macs += proj + d * static_cast<double>(layout.head_size());  // every token
    } else {
      macs += share * (proj + d * static_cast<double>(layout.size(i)));  // the tail, for its tokens
    }
  }
  return macs;
}

FlopCount model_flops(const ModelConfig& m, int64_t vocab_size, int64_t batch, int64_t query_len,
                      int64_t mem_len) {
  const double L = m.n_layer, C = m.d_model, H = m.n_head, D = m.d_head, F = m.d_inner;
  const double B = batch, Q = query_len, M = mem_len, K = M + Q;
  // Multiply-accumulates per token; see the formula in bench.h.
  const double out = output_macs(m, vocab_size);  // C*V for the full softmax
  const double n = L * (4 * C * H * D + 2 * C * F) + out;
  const double attn = L * 2 * H * D * K;
  // The encoding's own work, per layer, from its traits (src/model/encodings/<name>_traits.cpp).
  const PositionCost cost = encoding_traits(m.pos_encoding).cost(m, B, Q, K);
  const double pos = L * cost.score, proj = L * cost.table, proj_train_flops = cost.table_train;
  const double kv_mem = L * 2 * C * H * D * M / Q;
  FlopCount f;
  f.matmul_params = n;
  f.eval_per_token = 2 * (n + attn + pos + proj);  // the memory's k and v are kept (memory.h)
  f.eval_table_per_token = 2 * proj;
  f.train_per_token = 6 * (n + attn + pos) + 4 * kv_mem + proj_train_flops * proj;
  f.formula = fmt::format(
      "train = 6*(N + attn + pos) + 4*kv_mem + {:.0f}*proj, eval = 2*(N + attn + pos + proj); "
      "MACs/token: N = L*(4*C*H*D + 2*C*F) + {} = {:.0f}, attn = L*2*H*D*K = {:.0f}, "
      "pos = L*H*D*K = {:.0f}, kv_mem = L*2*C*H*D*M/Q = {:.0f}, proj = {:.0f} "
      "(L={} C={} H={} D={} F={} V={} B={} Q={} M={} K={})",
      proj_train_flops,
      m.adaptive ? fmt::format("adaptive output {:.0f} (Zipf tokens)", out) : std::string("C*V"), n,
      attn, pos, kv_mem, proj, m.n_layer, m.d_model, m.n_head, m.d_head, m.d_inner, vocab_size,
      batch, query_len, mem_len, mem_len + query_len);
  return f;
}

namespace {

nlohmann::json op_rows(const std::vector<OpTime>& ops) {
  auto rows = nlohmann::json::array();
  for (const auto& op : ops) {
    rows.push_back({{"name", op.name},
                    {"calls", op.calls},
                    {"self_ms", op.self_ms},
                    {"total_ms", op.total_ms}});
  }
  return rows;
}

}  // namespace

double BenchResult::median_step_tokens_per_s() const {
  return batch * query_len / (step_ms.median_ms / 1000.0);
}

double BenchResult::fastest_step_tokens_per_s() const {
  return batch * query_len / (step_ms.min_ms / 1000.0);
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
      {"step_ms", step_ms.to_json()},
      {"step_times_ms", step_times_ms},
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
      {"gemm_peak_n", gemm_peak_n},
      {"onednn_direct", onednn_direct},
      {"mfu", mfu},
      {"mfu_median_step", mfu_median_step},
      {"mfu_fastest_step", mfu_fastest_step},
      {"eval_mfu", eval_mfu},
      {"load_average", load_average},
      {"phases_ms",
       {{"forward", phases.forward_ms},
        {"backward", phases.backward_ms},
        {"clip", phases.clip_ms},
        {"optimizer", phases.optimizer_ms}}},
  };
  auto rates = nlohmann::json::array();
  for (const auto& rate : eval_rates) rates.push_back(rate.to_json());
  j["eval_protocols"] = rates;
  if (!profile.empty()) j["profile"] = {{"profiled_ms", profiled_ms}, {"ops", op_rows(profile)}};
  if (!eval_profile.empty()) {
    j["eval_profile"] = {{"profiled_ms", eval_profiled_ms}, {"ops", op_rows(eval_profile)}};
  }
  return j;
}

TimingStats TimingStats::of(std::vector<double> ms) {
  TimingStats t;
  t.count = static_cast<int64_t>(ms.size());
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  double sum = 0.0;
  for (double x : ms) sum += x;
  const size_t n = ms.size();
  t.mean_ms = sum / static_cast<double>(n);
  t.median_ms = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  return t;
}

nlohmann::json TimingStats::to_json() const {
  return {{"count", count}, {"mean_ms", mean_ms}, {"median_ms", median_ms}, {"min_ms", min_ms}};
}

nlohmann::json EvalRate::to_json() const {
  return {{"method", method},
          {"setting", setting},
          {"tokens", tokens},
          {"passes", passes},
          {"ms", ms.to_json()},
          {"tokens_per_s", tokens_per_s},
          {"ratio_to_train", ratio_to_train}};
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

// The rates that follow from the timings and the GEMM peak.
void finish_result(BenchResult& r, double gemm_peak_gflops, int64_t gemm_peak_n) {
  r.gemm_peak_gflops = gemm_peak_gflops;
  r.gemm_peak_n = gemm_peak_n;
  r.peak_rss_mb = peak_rss_mb();
  r.achieved_gflops = r.flops.train_per_token * r.train_tokens_per_s / 1e9;
  r.eval_achieved_gflops = r.flops.eval_per_token * r.eval_tokens_per_s / 1e9;
  r.mfu = r.achieved_gflops / r.gemm_peak_gflops;
  const auto training_mfu = [&r](double tokens_per_s) {
    return r.flops.train_per_token * tokens_per_s / 1e9 / r.gemm_peak_gflops;
  };
  r.mfu_median_step = training_mfu(r.median_step_tokens_per_s());
  r.mfu_fastest_step = training_mfu(r.fastest_step_tokens_per_s());
  r.eval_mfu = r.eval_achieved_gflops / r.gemm_peak_gflops;
  r.load_average = load_average();
}

}  // namespace txl
