// txl bench: how fast a config's model trains and evaluates on this machine, on random
// tokens (no corpus), and how that compares with the machine's measured GEMM peak.
//
// Model FLOPs per token (what the model must compute, counted in multiply-accumulates, MACs;
// 1 MAC = 2 FLOPs; L layers, C d_model, H heads x D, F d_inner, V vocab, B streams,
// Q tgt_len, M mem_len, K = M + Q keys):
//   N      = L*(4*C*H*D + 2*C*F) + C*V       weights applied to every token (q, k, v, out,
//                                            ff1, ff2; output layer), the "6N" term
//   attn   = L*2*H*D*K                       q.k and p.v over all K keys (the masked half is
//                                            computed too, so it is counted)
//   pos    = L*H*D*K                         relative: (q + v).r_k against one key per distance
//   kv_mem = L*2*C*H*D*M/Q                   k and v of the memory rows, recomputed each
//                                            training segment (evaluation keeps them, memory.h)
//   proj   = L*K*C*H*D/(B*Q)                 relative: W_r R, once per pass, shared by the batch
//            L*H*K*D*D/(B*Q)                 relative_learned: table rows x P_h
//   eval  FLOPs/token = 2*(N + attn + pos + proj)
//   train FLOPs/token = 6*(N + attn + pos) + 4*kv_mem + (4 | 6)*proj
// Training is forward (2 per MAC) plus backward (4 per MAC: input and weight gradients),
// except where no input gradient exists: memory rows are detached and the sinusoids R are
// constants, so those products cost 2 + 2 per MAC (the learned table has a gradient: 6).
// The embedding lookup is a gather, not counted; its gradient is the tied output layer's.
// With model.adaptive, C*V in N becomes the clusters computed (adaptive_output_macs): the head
// C*(c_1 + n) for every token, tail i's C*d_i + d_i*n_i for its share of the tokens, and with
// div_val > 1 the projections of the input and of the head. The bench draws adaptive runs'
// tokens from a Zipf distribution (p(id r) ~ 1/(r+1), word frequencies' usual shape, which
// the clusters are cut for) instead of uniformly, and the shares are that distribution's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/eval/evaluate.h"
#include "txl/platform/op_profile.h"

namespace txl {

struct BenchOptions {
  int64_t vocab_size = 10000;  // random tokens in [0, vocab_size)
  int64_t steps = 20;          // timed training steps; also the passes of each evaluation
  int64_t warmup = 3;          // untimed training steps (and one evaluation pass) first
  int64_t eval_repeats = 3;    // timed evaluations per protocol, alternated between protocols
  bool profile = false;        // per-operator breakdown of the timed training steps and of
                               // one evaluation by the primary protocol
  // Progress lines on stderr (steps or evaluation, tokens, rate, time left): the first after
  // this many seconds, then at most this often; 0: after every step and evaluation pass.
  double progress_seconds = 5.0;
};

// Repeated timings summarised. On a shared machine a burst of other work moves the mean; the
// median and the fastest stay put, so ratios are taken between those.
struct TimingStats {
  int64_t count = 0;
  double mean_ms = 0.0;
  double median_ms = 0.0;
  double min_ms = 0.0;

  static TimingStats of(std::vector<double> ms);
  nlohmann::json to_json() const;
};

// One evaluation protocol timed as `txl eval --method M` runs it (evaluate(), eval/evaluate.h)
// on random tokens: windows of tgt_len, batch_size x tgt_len tokens a pass; sliding at stride
// tgt_len / 2; memory with the training mem_len over batch_size streams.
struct EvalRate {
  std::string method;
  std::string setting;          // its settings as `txl eval` reports them ("stride 32", "-")
  int64_t tokens = 0;           // tokens scored by one evaluation
  int64_t passes = 0;           // forward passes of one evaluation
  TimingStats ms;               // wall time of one evaluation, over the repeats
  double tokens_per_s = 0.0;    // tokens / median
  double ratio_to_train = 0.0;  // tokens_per_s / training tokens/s at the median step

  nlohmann::json to_json() const;
};

struct FlopCount {
  double matmul_params = 0.0;         // N above
  double train_per_token = 0.0;       // FLOPs of one training step / tokens in it
  double eval_per_token = 0.0;        // FLOPs of one evaluation pass / tokens in it
  double eval_table_per_token = 0.0;  // its share for the encoding's table (relative: W_r R)
  std::string formula;                // the formula with this model's numbers filled in
};

FlopCount model_flops(const ModelConfig& model, int64_t vocab_size, int64_t batch,
                      int64_t query_len, int64_t mem_len);

// n random ids [n]: uniform; Zipf-distributed for the adaptive softmax, whose cost depends on
// which clusters the targets fall in: the training steps' and the evaluations' alike.
torch::Tensor bench_random_ids(const ModelConfig& model, int64_t vocab_size, int64_t n);
// The size n of the n^3 GEMM that gives the device's peak, and that peak (GFLOP/s) at the
// config's precision and threads.
int64_t gemm_peak_size(const Config& config);
double gemm_peak(const Config& config);

// The adaptive bench's token distribution: p(r) ~ 1/(r + 1) over [0, V)        -> [V] float64
torch::Tensor zipf_probabilities(int64_t vocab_size);
// MACs per token of model.adaptive's output layer and input projections, with the tokens drawn
// from zipf_probabilities; C*V without model.adaptive.
double output_macs(const ModelConfig& model, int64_t vocab_size);

// Mean wall-clock time per training step in each phase.
struct StepPhases {
  double forward_ms = 0.0;    // forward pass and loss
  double backward_ms = 0.0;   // zero_grad + backward
  double clip_ms = 0.0;       // gradient-norm clipping and reading the loss
  double optimizer_ms = 0.0;  // AdamW step
};

struct BenchResult {
  std::string device = "cpu";  // where the model ran (train.device, resolved)
  std::string cpu_model;       // the CPU every figure below comes from
  std::string cpu_flags;       // as txl sees them (cpu.h)
  std::string bf16_support;    // matrix units, vector instructions or emulated
  std::string precision;
  int threads = 0;
  std::string pos_encoding;
  int64_t parameters = 0;
  int64_t vocab_size = 0;
  int64_t batch = 0, query_len = 0, mem_len = 0;
  int64_t steps = 0, warmup = 0;
  double ms_per_step = 0.0;           // mean over the timed steps
  TimingStats step_ms;                // the same steps: median and fastest
  std::vector<double> step_times_ms;  // each timed step, in order
  double cpu_ms_per_step = 0.0;       // CPU time of all threads per step (work, not waiting)
  double train_tokens_per_s = 0.0;
  double eval_ms_per_pass = 0.0;
  double eval_cpu_ms_per_pass = 0.0;
  double eval_tokens_per_s = 0.0;
  std::vector<EvalRate> eval_rates;  // each protocol that applies, in protocol order
  double peak_rss_mb = 0.0;
  FlopCount flops;
  double achieved_gflops = 0.0;  // training
  double eval_achieved_gflops = 0.0;
  double gemm_peak_gflops = 0.0;  // measured n^3 GEMM, same dtype and threads, faster engine
  int64_t gemm_peak_n = 0;        // its n: 1024 on the CPU, 8192 on a GPU
  std::string onednn_direct;      // onednn_matmul_status(): whether products bypass LibTorch
  double mfu = 0.0;               // achieved_gflops / gemm_peak_gflops
  double mfu_median_step = 0.0;   // the same at the median step's rate
  // The fastest step's rate against the peak (itself the best of its measurements): both at
  // the machine's least disturbed moment, where a shared machine's noise moves the median
  // step and the peak unequally.
  double mfu_fastest_step = 0.0;
  double eval_mfu = 0.0;
  double load_average = 0.0;  // 1-minute load average at the end (shared machines)
  StepPhases phases;
  std::vector<OpTime> profile;  // with BenchOptions::profile
  std::vector<OpTime> profile_by_caller;
  double profiled_ms = 0.0;          // wall time of the profiled steps
  std::vector<OpTime> eval_profile;  // with BenchOptions::profile: one more evaluation by the
  double eval_profiled_ms = 0.0;     // primary protocol, after the timed ones, and its wall time
  std::vector<OpTime> eval_profile_by_caller;

  // Training tokens/s at the median step, and at the fastest.
  double median_step_tokens_per_s() const;
  double fastest_step_tokens_per_s() const;
  // The protocol the eval_* figures and the eval profile come from, the run's own
  // (TrainingFit::kOwn): memory where the model carries memory, else nonoverlap.
  std::string primary_method;
  nlohmann::json to_json() const;
};

// InputError (`what` leads it) when the configs' models, held at once as the bench holds them
// (weights, gradients and AdamW state of each; one step's activations at a time), need more
// memory than is available by training's estimate. Nothing is checked off the CPU.
void check_bench_memory(const std::vector<Config>& configs, int64_t vocab_size,
                        const std::string& what);

// The machine and the shapes: what every bench result starts with (bench_result.cpp).
BenchResult describe_bench(const Config& config, const BenchOptions& o);
// The rates that follow from the timings and the GEMM peak (bench_result.cpp).
void finish_result(BenchResult& r, double gemm_peak_gflops, int64_t gemm_peak_n);

// Builds the model of `config` (train.threads and train.precision apply), runs warm-up and
// timed training steps (forward, backward, clipping, AdamW; memory carried like training),
// then each evaluation protocol, and measures the GEMM peak. The eval_* figures are those of
// the memory protocol where the model carries memory, else of nonoverlap.
BenchResult run_bench(const Config& config, const BenchOptions& options);

// The configs' models side by side in one process: warm-up for each, then `rounds` x steps
// timed steps taken one model at a time in turn, so that other work on a shared machine
// slows them alike; then their evaluations, alternated the same way. The configs must share
// train.threads, train.precision and train.device. One result per config, in order, the
// GEMM peak measured once for all.
std::vector<BenchResult> run_interleaved_bench(const std::vector<Config>& configs,
                                               const BenchOptions& options, int64_t rounds);

// One evaluation window of `length` random tokens, batch 1, no memory.
struct LongWindowResult {
  std::string pos_encoding;
  std::string precision;
  int64_t length = 0;
  double eval_ms = 0.0;  // best of the passes
  double tokens_per_s = 0.0;
  double baseline_rss_mb = 0.0;  // resident memory just before the first pass
  double peak_rss_mb = 0.0;      // process peak after the passes
  double growth_mb = 0.0;        // peak - baseline: what the window itself needed

  nlohmann::json to_json() const;
  static LongWindowResult from_json(const nlohmann::json& j);
};

// Meant for a fresh process (peak memory is a per-process high-water mark). A pass longer
// than `progress_seconds` shows its progress on stderr (BenchOptions::progress_seconds).
LongWindowResult run_long_window(const Config& config, int64_t vocab_size, int64_t length,
                                 int passes, double progress_seconds = 5.0);

}  // namespace txl
