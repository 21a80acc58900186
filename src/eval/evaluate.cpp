#include "txl/eval/evaluate.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "txl/eval/eval_footprint.h"
#include "txl/eval/protocol.h"
#include "txl/platform/runtime.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// Accumulates per-token NLL into totals, windows and position buckets.
class Scorer {
 public:
  Scorer(EvalResult& result, int64_t length, int64_t buckets, TokenScores* tokens)
      : result_(result), tokens_(tokens) {
    if (buckets > 0) {
      bucket_size_ = std::max<int64_t>(1, (length + buckets - 1) / buckets);
      const int64_t n = (length + bucket_size_ - 1) / bucket_size_;
      sums_.assign(n, 0.0);
      counts_.assign(n, 0);
    }
  }

  // nll: [Q] float on the CPU for one window; positions first_pos.. of the window are scored,
  // whose targets are ids[first_target..] and which see `context` tokens before the first.
  void add_window(const torch::Tensor& nll, int64_t first_pos, int64_t first_target = 0,
                  int64_t context = 0, int64_t context_cap = 0) {
    auto v = nll.to(torch::kFloat64).contiguous();
    const double* p = v.data_ptr<double>();
    const int64_t n = v.numel();
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      sum += p[i];
      if (tokens_) {
        const int64_t seen = context + i;
        tokens_->nll[static_cast<size_t>(first_target + i)] = p[i];
        tokens_->context[static_cast<size_t>(first_target + i)] =
            context_cap > 0 ? std::min(seen, context_cap) : seen;
      }
      if (bucket_size_ > 0) {
        const int64_t b = (first_pos + i) / bucket_size_;
        sums_[b] += p[i];
        counts_[b] += 1;
      }
    }
    result_.nll += sum;
    result_.tokens += n;
    result_.window_nll.push_back(sum);
    result_.window_tokens.push_back(n);
  }

  void finish() {
    for (size_t b = 0; b < sums_.size(); ++b) {
      if (counts_[b] == 0) continue;
      result_.position_start.push_back(static_cast<int64_t>(b) * bucket_size_);
      result_.position_nll.push_back(sums_[b] / static_cast<double>(counts_[b]));
      result_.position_count.push_back(counts_[b]);
    }
  }

 private:
  EvalResult& result_;
  TokenScores* tokens_;  // null: not asked for
  int64_t bucket_size_ = 0;
  std::vector<double> sums_;
  std::vector<int64_t> counts_;
};

// Tells the caller's callback how far the evaluation is: tokens forwarded (each pass counted
// layer by layer, so one long window shows progress too) out of all the passes will forward.
class Progress {
 public:
  Progress(const EvalProgressFn& callback, int64_t windows, int64_t tokens, int64_t layers)
      : callback_(callback), windows_(windows), tokens_(tokens), layers_(layers) {}

  // A hook for ForwardOptions::after_layer of a pass over `pass_tokens` tokens (empty
  // without a callback).
  std::function<void(double)> layer_hook(int64_t pass_tokens) {
    if (!callback_) return {};
    return [this, pass_tokens](double layers_done) {
      report(static_cast<double>(done_tokens_) +
             static_cast<double>(pass_tokens) * layers_done /
                 static_cast<double>(std::max<int64_t>(1, layers_)));
    };
  }

  void pass_done(int64_t pass_tokens, int64_t pass_windows) {
    done_tokens_ += pass_tokens;
    done_windows_ += pass_windows;
    if (callback_) report(static_cast<double>(done_tokens_));
  }

 private:
  void report(double tokens_done) const {
    EvalProgress p;
    p.windows_done = done_windows_;
    p.windows = windows_;
    p.fraction = tokens_ > 0 ? std::min(1.0, tokens_done / static_cast<double>(tokens_)) : 1.0;
    callback_(p);
  }

  const EvalProgressFn& callback_;
  int64_t windows_, tokens_, layers_;
  int64_t done_tokens_ = 0, done_windows_ = 0;
};

// NLL of positions score_from..Q-1 of each row.                              -> [B, Q - score_from]
torch::Tensor per_token_nll(TransformerLM& model, const torch::Tensor& inputs,
                            const torch::Tensor& targets, const Memory& memory,
                            const EvalRequest& request, const PassPlan& plan, Memory* next_memory,
                            Progress& progress, int64_t score_from = 0) {
  ForwardOptions opts;
  opts.score_from = score_from;
  opts.progress = progress.layer_hook(inputs.numel());
  opts.targets = targets;
  opts.clamp_len = request.clamp_len;
  opts.key_window = plan.key_window;
  opts.aid = request.aid;
  opts.aid_factor = request.aid_factor;
  opts.aid_length = request.length;
  opts.train_len = request.train_len;
  opts.keep_memory = next_memory ? plan.keep_memory : 0;
  auto out = model->forward(inputs, memory, opts);
  if (next_memory) *next_memory = std::move(out.memory);
  progress.pass_done(inputs.numel(), inputs.size(0));
  return out.nll.to(torch::kCPU);  // [B, Q - score_from], read by the scorer on the CPU
}

// Runs the plan's passes in order and adds each row's scored positions to the scorer.
void run_plan(TransformerLM& model, const torch::Tensor& stream, const PassPlan& plan,
              const EvalRequest& request, Scorer& scorer, const EvalProgressFn& callback) {
  int64_t rows = 0, tokens = 0;
  for (const auto& pass : plan.passes) {
    rows += static_cast<int64_t>(pass.rows.size());
    for (const auto& row : pass.rows) tokens += row.len;
  }
  Progress progress(callback, rows, tokens, model->config().n_layer);
  Memory memory;
  // With memory, each stream's tokens so far (what its memory can hold of them); a pass with
  // fewer rows continues the last streams.
  std::vector<int64_t> stream_seen(plan.passes.empty() ? 0 : plan.passes.front().rows.size(), 0);
  for (const auto& pass : plan.passes) {
    std::vector<torch::Tensor> in, tg;
    int64_t skip = pass.rows.front().skip;  // positions every row of the pass leaves unscored
    for (const auto& row : pass.rows) {
      in.push_back(stream.narrow(0, row.start, row.len));
      tg.push_back(stream.narrow(0, row.start + 1, row.len));
      skip = std::min(skip, row.skip);
    }
    // Unscored positions were scored by an earlier row: they are context here, and the
    // output layer and the last block skip them.
    const int64_t n_rows = static_cast<int64_t>(pass.rows.size());
    Memory next;
    // A pass with fewer rows continues the last streams.
    const Memory context = plan.carries_memory ? last_streams(memory, n_rows) : Memory{};
    auto nll = per_token_nll(model, torch::stack(in), torch::stack(tg), context, request, plan,
                             plan.carries_memory ? &next : nullptr, progress,
                             skip);  // [R, W - skip]
    if (plan.carries_memory) memory = std::move(next);
    const size_t first_stream = stream_seen.size() - std::min(stream_seen.size(), size_t(n_rows));
    for (int64_t i = 0; i < n_rows; ++i) {
      const auto& row = pass.rows[i];
      int64_t remembered = 0;
      if (plan.carries_memory && first_stream + size_t(i) < stream_seen.size()) {
        int64_t& seen = stream_seen[first_stream + size_t(i)];
        remembered = std::min(seen, plan.keep_memory);
        seen += row.len;
      }
      const int64_t cap = plan.key_window > 0 ? plan.key_window - 1 : 0;
      scorer.add_window(nll[i].narrow(0, row.skip - skip, row.len - row.skip), row.skip,
                        row.start + row.skip, remembered + row.skip, cap);
    }
  }
}

}  // namespace

int64_t training_length(const Config& config) {
  const bool memory = encoding_traits(config.model.pos_encoding).takes_memory;
  return config.train.tgt_len + (memory ? config.train.mem_len : 0);
}

std::string aid_label(ExtrapolationAid aid, double factor) {
  if (aid == ExtrapolationAid::kNone) return "";
  if (factor <= 0) return to_string(aid);
  return fmt::format("{} x{:g}", to_string(aid), factor);
}

int64_t longest_window(const EvalResult& r) {
  int64_t longest = 0;
  for (const int64_t n : r.window_tokens) longest = std::max(longest, n);
  return longest;  // sliding: the first window is scored whole, so it counts in full
}

double EvalResult::ppl() const { return std::exp(mean_nll()); }
double EvalResult::bpc() const { return mean_nll() / std::log(2.0); }

EvalResult evaluate(TransformerLM& model, const std::vector<int32_t>& ids,
                    const EvalRequest& request, const EvalProgressFn& progress) {
  return evaluate(model, ids, request, progress, nullptr);
}

EvalResult evaluate(TransformerLM& model, const std::vector<int32_t>& ids,
                    const EvalRequest& request, const EvalProgressFn& progress,
                    TokenScores* tokens) {
  check_eval_request(model, request);
  const int64_t n_targets = scored_targets(request, static_cast<int64_t>(ids.size()));
  if (n_targets < 1) throw InputError("the evaluation split has fewer than 2 tokens");
  check_eval_fits(model, request, static_cast<int64_t>(ids.size()));
  auto stream = torch::from_blob(const_cast<int32_t*>(ids.data()), {n_targets + 1}, torch::kInt32)
                    .to(model->device(), torch::kInt64);  // [N]

  const EvalProtocol& protocol = eval_protocol(request.protocol);
  EvalResult result;
  result.protocol = request.protocol;
  result.aid = request.aid;
  result.aid_factor = request.aid_factor;
  result.length = request.length;
  result.settings = resolved_settings(request);
  if (protocol.adjust_result) protocol.adjust_result(n_targets, result.settings);
  // No window is longer than the split (a --lengths past it scores one window of it all).
  if (tokens) {
    tokens->nll.assign(static_cast<size_t>(n_targets), std::nan(""));
    tokens->context.assign(static_cast<size_t>(n_targets), 0);
  }
  Scorer scorer(result, std::min(request.length, n_targets), request.position_buckets, tokens);

  EvalModeGuard guard(model, request.precision);
  run_plan(model, stream, protocol.plan(request, n_targets), request, scorer, progress);
  scorer.finish();
  return result;
}

}  // namespace txl
