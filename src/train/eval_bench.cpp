// txl bench --eval-only (eval_bench.h): one protocol at one length, timed on random tokens.
#include "txl/train/eval_bench.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "txl/config/encodings.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/model/encodings/relative.h"
#include "txl/model/transformer.h"
#include "txl/platform/cpu.h"
#include "txl/platform/device.h"
#include "txl/platform/process.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/train/bench_progress.h"
#include "txl/util/clock.h"

namespace txl {

namespace {

// Tokens to score: o.tokens, else enough for 8 passes with full memory after the passes that
// fill it (memory protocol: ceil(M / L) of them, counted four times over so that passes with
// full memory make most of the time), at the protocol's batch.
int64_t tokens_to_score(const EvalRequest& request, const EvalBenchOptions& o) {
  if (o.tokens > 0) return o.tokens;
  const EvalProtocol& protocol = eval_protocol(request.protocol);
  const int64_t probe = 8 * std::max<int64_t>(request.batch_tokens, request.length);
  const PassPlan plan = protocol.plan(request, probe);
  const int64_t passes = std::max<int64_t>(1, static_cast<int64_t>(plan.passes.size()));
  const int64_t fill =
      plan.carries_memory
          ? 4 * ((plan.keep_memory + request.length - 1) / std::max<int64_t>(request.length, 1))
          : 0;
  return std::max<int64_t>(request.length + 1, probe * (8 + fill) / passes);
}

// FLOPs of the plan's passes per scored token (eval_bench.h).
double flops_per_scored_token(const Config& config, const EvalBenchOptions& o, const PassPlan& plan,
                              int64_t scored) {
  const ModelConfig& m = config.model;
  double flops = 0.0;
  int64_t seen = 0;             // tokens each stream has read before this pass
  std::set<int64_t> projected;  // key counts whose W_r R an earlier pass computed
  for (const auto& pass : plan.passes) {
    const int64_t rows = static_cast<int64_t>(pass.rows.size());
    const int64_t len = pass.rows.front().len;
    const int64_t memory = plan.carries_memory ? std::min(plan.keep_memory, seen) : 0;
    const FlopCount f = model_flops(m, o.vocab_size, rows, len, memory);
    double per_token = f.eval_per_token;
    const int64_t keys = memory + len;
    const bool kept = m.pos_encoding == PosEncoding::kRelative &&
                      keys * m.n_head * m.d_head * 4 <= kKeptDistanceKeyBytes;
    if (kept && !projected.insert(keys).second) per_token -= f.eval_table_per_token;
    flops += per_token * static_cast<double>(rows * len);
    seen += len;
  }
  return flops / static_cast<double>(std::max<int64_t>(scored, 1));
}

double timed_evaluation(TransformerLM& model, const std::vector<int32_t>& ids,
                        const EvalRequest& request, BenchProgress& progress,
                        const std::string& label) {
  const torch::Device device = model->device();
  synchronize(device);
  const auto t0 = Clock::now();
  const EvalResult e =
      evaluate(model, ids, request, progress.evaluation(label, int64_t(ids.size()) - 1));
  synchronize(device);
  TORCH_CHECK(std::isfinite(e.nll) && e.tokens > 0, "bench: evaluation NLL is not finite");
  return 1000.0 * seconds_since(t0);
}

}  // namespace

EvalBenchResult run_eval_bench(const Config& config, const EvalBenchOptions& o) {
  const auto& tc = config.train;
  EvalBenchResult r;
  r.threads = set_threads(tc.threads);
  r.cpu_model = cpu_model_name();
  r.cpu_flags = to_string(detect_cpu_flags());
  r.precision = to_string(o.settings.precision);
  r.pos_encoding = to_string(config.model.pos_encoding);
  r.vocab_size = o.vocab_size;
  r.length = o.length > 0 ? o.length : tc.tgt_len;
  const torch::Device device = resolve_device(tc.device, "train.device");
  prepare_device(device);
  r.device = device.str();
  torch::manual_seed(static_cast<uint64_t>(tc.seed));
  TransformerLM model = make_model(config.model, o.vocab_size, device);
  r.parameters = count_parameters(*model);
  const EvalRequest request =
      make_eval_request(o.settings, r.length, tc.batch_size * r.length, training_length(config));
  check_eval_request(model, request);
  const double peak_before = gemm_peak(config);
  r.tokens = tokens_to_score(request, o);
  const auto t = bench_random_ids(config.model, o.vocab_size, r.tokens + 1).to(torch::kInt);
  const std::vector<int32_t> ids(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + r.tokens + 1);
  const EvalProtocol& protocol = eval_protocol(request.protocol);
  const PassPlan plan = protocol.plan(request, r.tokens);
  r.protocol = protocol.name;
  r.setting = settings_text(protocol, request.settings);
  r.passes = static_cast<int64_t>(plan.passes.size());
  r.flops_per_token = flops_per_scored_token(config, o, plan, r.tokens);
  BenchProgress progress(o.progress_seconds);
  const std::string label = r.protocol + " L=" + std::to_string(r.length);
  timed_evaluation(model, ids, request, progress, label + " (warm-up)");
  std::vector<double> ms;
  for (int64_t i = 0; i < std::max<int64_t>(o.repeats, 1); ++i)
    ms.push_back(timed_evaluation(model, ids, request, progress,
                                  label + " " + std::to_string(i + 1) + "/" +
                                      std::to_string(std::max<int64_t>(o.repeats, 1))));
  if (o.profile) {
    OpProfiler profiler;
    r.profiled_ms = timed_evaluation(model, ids, request, progress, label + " (profiled)");
    r.profile = profiler.stop();
    r.profile_by_caller = profiler.by_caller();
  }
  r.ms = TimingStats::of(ms);
  r.tokens_per_s = static_cast<double>(r.tokens) / (r.ms.median_ms / 1000.0);
  r.gemm_peak_gflops = std::max(peak_before, gemm_peak(config));
  r.achieved_gflops = r.flops_per_token * r.tokens_per_s / 1e9;
  r.mfu = r.achieved_gflops / r.gemm_peak_gflops;
  r.peak_rss_mb = peak_rss_mb();
  r.load_average = load_average();
  return r;
}

nlohmann::json EvalBenchResult::to_json() const {
  auto ops = [](const std::vector<OpTime>& rows) {
    auto out = nlohmann::json::array();
    for (const auto& op : rows)
      out.push_back({{"name", op.name}, {"calls", op.calls}, {"self_ms", op.self_ms}});
    return out;
  };
  nlohmann::json j = {{"mode", "eval-only"},
                      {"device", device},
                      {"cpu_model", cpu_model},
                      {"cpu_flags", cpu_flags},
                      {"precision", precision},
                      {"threads", threads},
                      {"pos_encoding", pos_encoding},
                      {"parameters", parameters},
                      {"vocab_size", vocab_size},
                      {"method", protocol},
                      {"setting", setting},
                      {"length", length},
                      {"tokens", tokens},
                      {"passes", passes},
                      {"ms", this->ms.to_json()},
                      {"tokens_per_s", tokens_per_s},
                      {"flops_per_token", flops_per_token},
                      {"achieved_gflops", achieved_gflops},
                      {"gemm_peak_gflops", gemm_peak_gflops},
                      {"mfu", mfu},
                      {"peak_rss_mb", peak_rss_mb},
                      {"load_average", load_average}};
  if (!profile.empty()) {
    j["profile"] = {
        {"profiled_ms", profiled_ms}, {"ops", ops(profile)}, {"by_caller", ops(profile_by_caller)}};
  }
  return j;
}

}  // namespace txl
