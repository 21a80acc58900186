#include "txl/model/sampling.h"

#include <cmath>
#include <limits>

namespace txl {

ContextFeeder::ContextFeeder(TransformerLM& model, int64_t context, int64_t chunk)
    : model_(model), context_(context), chunk_(std::max<int64_t>(1, chunk)) {
  TORCH_CHECK(context >= 1, "sampling context must be >= 1, got ", context);
}

torch::Tensor ContextFeeder::feed(const std::vector<int64_t>& tokens) {
  TORCH_CHECK(!tokens.empty(), "ContextFeeder::feed needs at least one token");
  torch::NoGradGuard no_grad;
  ForwardOptions opts;
  if (!model_->has_memory()) {
    window_.insert(window_.end(), tokens.begin(), tokens.end());
    if (static_cast<int64_t>(window_.size()) > context_) {
      window_.erase(window_.begin(), window_.end() - context_);
    }
    auto input = torch::tensor(window_, torch::kLong).unsqueeze(0).to(model_->device());  // [1, Q]
    auto logits = model_->forward(input, {}, opts).scores;  // [1, Q, V]
    return logits[0][-1].to(torch::kCPU, torch::kFloat32);  // [V]
  }
  opts.keep_memory = context_;
  torch::Tensor last;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(chunk_)) {
    const size_t end = std::min(tokens.size(), start + static_cast<size_t>(chunk_));
    auto input = torch::tensor(std::vector<int64_t>(tokens.begin() + start, tokens.begin() + end),
                               torch::kLong)
                     .unsqueeze(0)
                     .to(model_->device());  // [1, Q]
    auto out = model_->forward(input, memory_, opts);
    memory_ = std::move(out.memory);  // [1, <=context, C]
    last = out.scores[0][-1];         // [V]
  }
  return last.to(torch::kCPU, torch::kFloat32);
}

int64_t draw_token(const torch::Tensor& logits, double temperature, int64_t top_k,
                   SplitMix64& rng) {
  TORCH_CHECK(temperature > 0, "temperature must be > 0, got ", temperature);
  auto scaled = (logits.to(torch::kCPU, torch::kFloat64) / temperature).contiguous();  // [V]
  const int64_t vocab = scaled.size(0);
  if (top_k > 0 && top_k < vocab) {
    auto kept = std::get<1>(scaled.topk(top_k));  // [k]
    auto masked = torch::full_like(scaled, -std::numeric_limits<double>::infinity());
    masked.index_copy_(0, kept, scaled.index_select(0, kept));
    scaled = masked;
  }
  auto probs = torch::softmax(scaled, 0).contiguous();  // [V] float64
  const double* p = probs.data_ptr<double>();
  const double u = rng.uniform();
  double cum = 0.0;
  int64_t last_nonzero = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (p[i] <= 0.0) continue;
    cum += p[i];
    last_nonzero = i;
    if (u < cum) return i;
  }
  return last_nonzero;  // rounding left cum slightly below 1
}

std::vector<int64_t> sample_tokens(TransformerLM& model, const std::vector<int64_t>& prompt,
                                   const SamplingOptions& o) {
  TORCH_CHECK(!prompt.empty(), "sampling needs a prompt of at least one token");
  model->eval();
  SplitMix64 rng(o.seed);
  ContextFeeder feeder(model, o.context, o.chunk);
  auto logits = feeder.feed(prompt);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(o.tokens));
  for (int64_t i = 0; i < o.tokens; ++i) {
    const int64_t next = draw_token(logits, o.temperature, o.top_k, rng);
    out.push_back(next);
    if (i + 1 < o.tokens) logits = feeder.feed({next});
  }
  return out;
}

}  // namespace txl
