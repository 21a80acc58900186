#include "txl/eval/evaluate.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "txl/eval/eval_memory.h"
#include "txl/platform/runtime.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// Accumulates per-token NLL into totals, windows and position buckets.
class Scorer {
 public:
  Scorer(EvalResult& result, int64_t length, int64_t buckets) : result_(result) {
    if (buckets > 0) {
      bucket_size_ = std::max<int64_t>(1, (length + buckets - 1) / buckets);
      const int64_t n = (length + bucket_size_ - 1) / bucket_size_;
      sums_.assign(n, 0.0);
      counts_.assign(n, 0);
    }
  }

  // nll: [Q] float on the CPU for one window; positions first_pos.. of the window are scored.
  void add_window(const torch::Tensor& nll, int64_t first_pos) {
    auto v = nll.to(torch::kFloat64).contiguous();
    const double* p = v.data_ptr<double>();
    const int64_t n = v.numel();
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      sum += p[i];
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
                            const EvalRequest& request, Memory* next_memory, Progress& progress,
                            int64_t score_from = 0) {
  ForwardOptions opts;
  opts.score_from = score_from;
  opts.progress = progress.layer_hook(inputs.numel());
  opts.targets = targets;
  opts.clamp_len = request.clamp_len;
  opts.aid = request.aid;
  opts.aid_factor = request.aid_factor;
  opts.aid_length = request.length;
  opts.train_len = request.train_len;
  opts.keep_memory = next_memory ? request.mem_len : 0;
  auto out = model->forward(inputs, memory, opts);
  if (next_memory) *next_memory = std::move(out.memory);
  progress.pass_done(inputs.numel(), inputs.size(0));
  return out.nll.to(torch::kCPU);  // [B, Q - score_from], read by the scorer on the CPU
}

// Windows [start, start + len) of inputs with targets shifted by one; scored from `skip`.
struct Window {
  int64_t start;
  int64_t len;
  int64_t skip;
};

void score_windows(TransformerLM& model, const torch::Tensor& stream,
                   const std::vector<Window>& windows, const EvalRequest& request, Scorer& scorer,
                   const EvalProgressFn& callback) {
  int64_t tokens = 0;
  for (const auto& w : windows) tokens += w.len;
  Progress progress(callback, static_cast<int64_t>(windows.size()), tokens,
                    model->config().n_layer);
  const int64_t per_batch =
      std::max<int64_t>(1, request.batch_tokens / std::max<int64_t>(1, request.length));
  size_t i = 0;
  while (i < windows.size()) {
    // Group consecutive windows of equal length into one batch.
    size_t j = i + 1;
    while (j < windows.size() && static_cast<int64_t>(j - i) < per_batch &&
           windows[j].len == windows[i].len)
      ++j;
    std::vector<torch::Tensor> in, tg;
    int64_t skip = windows[i].skip;  // positions every window of the batch leaves unscored
    for (size_t w = i; w < j; ++w) {
      in.push_back(stream.narrow(0, windows[w].start, windows[w].len));
      tg.push_back(stream.narrow(0, windows[w].start + 1, windows[w].len));
      skip = std::min(skip, windows[w].skip);
    }
    // Unscored positions were scored by an earlier window: they are context here, and the
    // output layer and the last block skip them.
    auto nll = per_token_nll(model, torch::stack(in), torch::stack(tg), {}, request, nullptr,
                             progress, skip);  // [b, L - skip]
    for (size_t w = i; w < j; ++w) {
      const auto& win = windows[w];
      scorer.add_window(nll[w - i].narrow(0, win.skip - skip, win.len - win.skip), win.skip);
    }
    i = j;
  }
}

// One pass of the memory method: segment [pos, pos + len) of streams first..streams-1.
struct MemoryPass {
  int64_t pos;
  int64_t len;
  int64_t first;
};

// Stream b scores targets [b*T, (b+1)*T); the last stream also takes the remainder and goes
// on alone once the others are done.
std::vector<MemoryPass> memory_passes(int64_t streams, int64_t n_targets, int64_t length) {
  const int64_t per = n_targets / streams;
  const int64_t last_len = n_targets - per * (streams - 1);
  std::vector<MemoryPass> passes;
  for (int64_t pos = 0; pos < last_len;) {
    const bool all_streams = pos < per;
    const int64_t len = std::min(length, (all_streams ? per : last_len) - pos);
    passes.push_back({pos, len, all_streams ? 0 : streams - 1});
    pos += len;
  }
  return passes;
}

// The block [first, end) of `count` items that shard `shard` of `shards` takes.
std::pair<int64_t, int64_t> shard_block(int64_t count, const EvalRequest& r) {
  return {count * r.shard / r.shards, count * (r.shard + 1) / r.shards};
}

void evaluate_memory(TransformerLM& model, const torch::Tensor& stream, int64_t n_targets,
                     const EvalRequest& request, Scorer& scorer, const EvalProgressFn& callback) {
  const int64_t streams = std::max<int64_t>(1, std::min(request.streams, n_targets));
  const int64_t per = n_targets / streams;
  const auto passes = memory_passes(streams, n_targets, request.length);
  // This shard's streams [b0, b1); memory holds their rows in that order.
  const auto [b0, b1] = shard_block(streams, request);
  int64_t windows = 0;
  for (const auto& p : passes) windows += std::max<int64_t>(0, b1 - std::max(p.first, b0));
  Progress progress(callback, windows, n_targets, model->config().n_layer);
  Memory memory;
  for (const auto& p : passes) {
    const int64_t first = std::max(p.first, b0);
    if (first >= b1) continue;
    if (p.first > 0 && p.pos == per) {  // only the last stream goes on
      for (auto& layer : memory.layers) layer = layer.narrow(0, streams - 1 - b0, 1);
    }
    std::vector<torch::Tensor> in, tg;
    for (int64_t b = first; b < b1; ++b) {
      in.push_back(stream.narrow(0, b * per + p.pos, p.len));
      tg.push_back(stream.narrow(0, b * per + p.pos + 1, p.len));
    }
    Memory next;
    auto nll = per_token_nll(model, torch::stack(in), torch::stack(tg), memory, request, &next,
                             progress);  // [b, Q]
    memory = std::move(next);
    for (int64_t b = 0; b < nll.size(0); ++b) scorer.add_window(nll[b], 0);
  }
}

}  // namespace

std::string to_string(EvalMethod method) {
  switch (method) {
    case EvalMethod::kNonOverlap:
      return "nonoverlap";
    case EvalMethod::kSliding:
      return "sliding";
    case EvalMethod::kMemory:
      return "memory";
  }
  return "?";
}

EvalMethod parse_eval_method(const std::string& name) {
  if (name == "nonoverlap") return EvalMethod::kNonOverlap;
  if (name == "sliding") return EvalMethod::kSliding;
  if (name == "memory") return EvalMethod::kMemory;
  throw InputError("--method \"" + name +
                   "\" is not valid; expected one of nonoverlap, sliding, memory");
}

int64_t effective_stride(const EvalRequest& request) {
  if (request.method != EvalMethod::kSliding) return 0;
  return request.stride > 0 ? request.stride : std::max<int64_t>(1, request.length / 2);
}

int64_t training_length(const Config& config) {
  const bool memory = encoding_traits(config.model.pos_encoding).takes_memory;
  return config.train.tgt_len + (memory ? config.train.mem_len : 0);
}

std::string aid_label(ExtrapolationAid aid, double factor) {
  if (aid == ExtrapolationAid::kNone) return "";
  if (factor <= 0) return to_string(aid);
  return fmt::format("{} x{:g}", to_string(aid), factor);
}

namespace {

// The aid must be one the encoding has; a window longer than a learned table needs one.
void check_aid(const ModelConfig& model, const EvalRequest& r) {
  const EncodingTraits& traits = encoding_traits(model.pos_encoding);
  if (r.aid != ExtrapolationAid::kNone &&
      std::find(traits.aids.begin(), traits.aids.end(), r.aid) == traits.aids.end()) {
    std::vector<std::string> names;
    for (const auto aid : traits.aids) names.push_back(to_string(aid));
    throw InputError("--aid " + to_string(r.aid) + " does not apply to model.pos_encoding " +
                     traits.name + " (its aids: " + (names.empty() ? "none" : join(names)) + ")");
  }
  // The same rule check_eval_options applies to --aid-factor, for requests built in code.
  if (!(r.aid_factor == 0 || r.aid_factor >= 1) || !std::isfinite(r.aid_factor)) {
    throw InputError("--aid-factor must be >= 1 (or 0 = derived), got " +
                     fmt::format("{}", r.aid_factor));
  }
  const int64_t limit = position_limit(model);
  if (r.length > limit && r.aid != ExtrapolationAid::kInterpolate) {
    throw InputError("length " + std::to_string(r.length) + " is past the " +
                     std::to_string(limit) + " positions of model.pos_encoding " + traits.name +
                     " (model." + traits.length_limit_key +
                     "): a learned table has no rows for later positions; evaluate up to " +
                     std::to_string(limit) + " or add --aid interpolate");
  }
  if (r.aid == ExtrapolationAid::kInterpolate && r.aid_factor > 0 &&
      static_cast<double>(r.length - 1) / r.aid_factor > static_cast<double>(limit - 1)) {
    throw InputError("--aid-factor " + fmt::format("{:g}", r.aid_factor) + " maps length " +
                     std::to_string(r.length) + " past the " + std::to_string(limit) +
                     " positions of the table; use at least " +
                     fmt::format("{:g}", static_cast<double>(r.length - 1) / (limit - 1)) +
                     " or 0 (derived)");
  }
}

}  // namespace

int64_t longest_window(const EvalResult& r) {
  int64_t longest = 0;
  for (const int64_t n : r.window_tokens) longest = std::max(longest, n);
  return longest;  // sliding: the first window is scored whole, so it counts in full
}

double EvalResult::ppl() const { return std::exp(mean_nll()); }
double EvalResult::bpc() const { return mean_nll() / std::log(2.0); }

void check_eval_request(const TransformerLM& model, const EvalRequest& r) {
  if (r.length < 1)
    throw InputError("evaluation length must be a positive integer, got " +
                     std::to_string(r.length));
  if (r.method == EvalMethod::kSliding && (r.stride < 0 || r.stride > r.length)) {
    throw InputError("--stride " + std::to_string(r.stride) +
                     " must be between 1 and the window length " + std::to_string(r.length));
  }
  if (r.method == EvalMethod::kMemory && !model->has_memory()) {
    throw InputError(
        "--method memory needs an encoding with memory; this run uses model.pos_encoding = " +
        to_string(model->config().pos_encoding) + " (use nonoverlap or sliding)");
  }
  check_aid(model->config(), r);
  if (r.mem_len < 0) throw InputError("--mem-len must be >= 0, got " + std::to_string(r.mem_len));
  if (r.streams < 1) throw InputError("--streams must be >= 1, got " + std::to_string(r.streams));
  if (r.shards < 1 || r.shard < 0 || r.shard >= r.shards) {
    throw std::invalid_argument("evaluation shard " + std::to_string(r.shard) + " of " +
                                std::to_string(r.shards) + " does not exist");
  }
  if (r.clamp_len < -1) {
    throw InputError("--clamp-len must be >= 0 (0 = no cap), got " + std::to_string(r.clamp_len));
  }
  const EncodingTraits& traits = encoding_traits(model->config().pos_encoding);
  if (r.clamp_len >= 0 && !traits.uses_clamp_len) {
    throw InputError("--clamp-len " + std::to_string(r.clamp_len) + " caps the distances of " +
                     join(encoding_names_where(&EncodingTraits::uses_clamp_len)) +
                     ", but the run's model.pos_encoding is " + traits.name +
                     ", which ignores it; leave --clamp-len out");
  }
}

EvalResult evaluate(TransformerLM& model, const std::vector<int32_t>& ids,
                    const EvalRequest& request, const EvalProgressFn& progress) {
  check_eval_request(model, request);
  const int64_t n_targets = scored_targets(request, static_cast<int64_t>(ids.size()));
  if (n_targets < 1) throw InputError("the evaluation split has fewer than 2 tokens");
  check_eval_fits(model, request, static_cast<int64_t>(ids.size()));
  auto stream = torch::from_blob(const_cast<int32_t*>(ids.data()), {n_targets + 1}, torch::kInt32)
                    .to(model->device(), torch::kInt64);  // [N]

  EvalResult result;
  result.method = request.method;
  result.aid = request.aid;
  result.aid_factor = request.aid_factor;
  result.length = request.length;
  result.mem_len = request.method == EvalMethod::kMemory ? request.mem_len : 0;
  result.streams = request.method == EvalMethod::kMemory ? std::min(request.streams, n_targets) : 0;
  result.stride = effective_stride(request);
  Scorer scorer(result, request.length, request.position_buckets);

  // Restores the caller's train/eval mode on every exit path.
  struct ModeGuard {
    TransformerLM& model;
    bool was_training;
    ~ModeGuard() { model->train(was_training); }
  } mode_guard{model, model->is_training()};
  model->eval();
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(request.precision, model->device());
  const int64_t len = request.length;
  if (request.method == EvalMethod::kMemory) {
    evaluate_memory(model, stream, n_targets, request, scorer, progress);
  } else {
    std::vector<Window> windows;
    if (request.method == EvalMethod::kNonOverlap) {
      for (int64_t s = 0; s < n_targets; s += len)
        windows.push_back({s, std::min(len, n_targets - s), 0});
    } else {
      const int64_t stride = result.stride;
      // First window scored whole; window ending at e scores targets [e - stride, e).
      const int64_t first = std::min(len, n_targets);
      windows.push_back({0, first, 0});
      for (int64_t end = first + stride; end - stride < n_targets; end += stride) {
        const int64_t e = std::min(end, n_targets);
        const int64_t start = std::max<int64_t>(0, e - len);
        const int64_t scored = e - (end - stride);
        windows.push_back({start, e - start, e - start - scored});
      }
    }
    const auto [w0, w1] = shard_block(static_cast<int64_t>(windows.size()), request);
    windows = std::vector<Window>(windows.begin() + w0, windows.begin() + w1);
    score_windows(model, stream, windows, request, scorer, progress);
  }
  scorer.finish();
  return result;
}

}  // namespace txl
