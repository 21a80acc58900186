// Adaptive input and adaptive softmax as the model's two ends (output_head.h); the
// factorisation itself is adaptive_softmax.cpp's.
#include <algorithm>

#include "txl/model/output_head.h"
#include "txl/model/transformer.h"

namespace txl {

namespace {

class AdaptiveEmbedding : public InputEmbedding {
 public:
  explicit AdaptiveEmbedding(AdaptiveInput input) : input_(std::move(input)) {}
  torch::Tensor embed(const torch::Tensor& tokens) override { return input_(tokens); }

 private:
  AdaptiveInput input_;
};

class AdaptiveHead : public OutputHead {
 public:
  AdaptiveHead(AdaptiveInput input, AdaptiveSoftmax softmax, const torch::Tensor& bias)
      : input_(std::move(input)), softmax_(std::move(softmax)), bias_(bias) {}

  HeadOutput forward(const torch::Tensor& h, const torch::Tensor& targets,
                     const ForwardOptions& options) override {
    const AdaptiveWeights w = softmax_->weights(*input_, bias_);
    const int64_t vocab = bias_.size(0);
    const int64_t rows = h.size(0) * h.size(1);
    const auto flat = h.reshape({rows, -1});  // [N, C]
    HeadOutput out;
    if (targets.defined()) {
      const auto flat_targets = targets.reshape({-1});  // [N]
      if (torch::GradMode::is_enabled()) {
        out.nll = adaptive_nll(flat, flat_targets, w).view(targets.sizes());
      } else {
        // Each cluster over all its rows, in blocks whose logits fit what the budget gives a
        // block of rows of the head and widest tail.
        const int64_t block = output_row_block(rows, row_width(), options);
        out.nll = adaptive_nll_without_grad(flat, flat_targets, w, block * row_width() * 4)
                      .view(targets.sizes());  // [B, S]
      }
    }
    if (!options.want_scores && targets.defined()) return out;
    // The [N, V] log-probabilities are the result; blocks bound the temporaries beside them.
    const int64_t block = std::clamp<int64_t>(kLogitBudgetBytes / (vocab * 4), 1, rows);
    std::vector<torch::Tensor> parts;
    for (int64_t first = 0; first < rows; first += block)
      parts.push_back(adaptive_log_probs(flat.narrow(0, first, std::min(block, rows - first)), w));
    out.scores = torch::cat(parts).view({h.size(0), h.size(1), vocab});  // [B, S, V]
    return out;
  }
  ScoreKind score_kind() const override { return ScoreKind::kLogProbs; }
  int64_t row_width() const override {
    return input_->layout().head_size() + input_->layout().largest_tail();
  }

 private:
  AdaptiveInput input_;
  AdaptiveSoftmax softmax_;
  const torch::Tensor& bias_;
};

}  // namespace

std::unique_ptr<InputEmbedding> make_adaptive_embedding(AdaptiveInput input) {
  return std::make_unique<AdaptiveEmbedding>(std::move(input));
}

std::unique_ptr<OutputHead> make_adaptive_head(AdaptiveInput input, AdaptiveSoftmax softmax,
                                               const torch::Tensor& output_bias) {
  return std::make_unique<AdaptiveHead>(std::move(input), std::move(softmax), output_bias);
}

}  // namespace txl
