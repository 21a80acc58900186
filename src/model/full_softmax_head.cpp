// The full softmax's two ends (output_head.h): an embedding table in, a [V, C] product out.
#include <algorithm>

#include "txl/model/kernels.h"
#include "txl/model/output_head.h"
#include "txl/model/transformer.h"
#include "txl/platform/runtime.h"

namespace txl {

namespace {

class TableEmbedding : public InputEmbedding {
 public:
  explicit TableEmbedding(torch::nn::Embedding table) : table_(std::move(table)) {}
  torch::Tensor embed(const torch::Tensor& tokens) override { return table_(tokens); }

 private:
  torch::nn::Embedding table_;
};

// Where the output layer's bias is added: in the product (layer) or, where the loss runs its
// float32 row kernels (float32 logits on the CPU), in the loss, on the fly (token_nll).
struct OutputBias {
  torch::Tensor layer, loss;  // one of them is the bias, the other undefined
};

OutputBias place_output_bias(const torch::Tensor& h, const torch::Tensor& bias, bool in_loss) {
  in_loss = in_loss && h.is_cpu() && h.scalar_type() == torch::kFloat32 &&
            bias.scalar_type() == torch::kFloat32 && !autocast_enabled(c10::DeviceType::CPU);
  return in_loss ? OutputBias{torch::Tensor(), bias} : OutputBias{bias, torch::Tensor()};
}

// h: [N, C], weight: [V, C], targets: [N] -> [N] float32, `block` rows at a time.
torch::Tensor blocked_output_nll(const torch::Tensor& h, const torch::Tensor& weight,
                                 const OutputBias& bias, const torch::Tensor& targets,
                                 int64_t block) {
  const int64_t rows = h.size(0);
  auto nll = torch::empty({rows}, h.options().dtype(torch::kFloat32));  // [N]
  for (int64_t first = 0; first < rows; first += block) {
    const int64_t n = std::min(block, rows - first);
    auto logits = affine(h.narrow(0, first, n), weight, bias.layer);  // [n, V]
    nll.narrow(0, first, n).copy_(token_nll(logits, targets.narrow(0, first, n), bias.loss));
  }
  return nll;
}

class FullSoftmaxHead : public OutputHead {
 public:
  FullSoftmaxHead(torch::nn::Embedding table, torch::nn::Linear output, const torch::Tensor& bias)
      : table_(std::move(table)), output_(std::move(output)), bias_(bias) {}

  HeadOutput forward(const torch::Tensor& h, const torch::Tensor& targets,
                     const ForwardOptions& options) override {
    const auto& weight = output_ ? output_->weight : table_->weight;  // [V, C]
    const int64_t vocab = weight.size(0);
    const int64_t rows = h.size(0) * h.size(1);
    const int64_t block = output_row_block(rows, vocab, options);
    const bool only_loss = targets.defined() && !options.want_scores;
    const auto bias = place_output_bias(h, bias_, only_loss);
    HeadOutput out;
    if (block < rows) {
      out.nll =
          blocked_output_nll(h.reshape({rows, -1}), weight, bias, targets.reshape({-1}), block)
              .view(targets.sizes());  // [B, S]
      return out;
    }
    auto logits = affine(h, weight, bias.layer);  // [B, S, V], without the bias the loss adds
    if (targets.defined()) {
      out.nll = token_nll(logits.reshape({-1, vocab}), targets.reshape({-1}), bias.loss)
                    .view(targets.sizes());  // [B, S]
    }
    if (options.want_scores || !targets.defined()) out.scores = logits;
    return out;
  }
  ScoreKind score_kind() const override { return ScoreKind::kLogits; }
  int64_t row_width() const override { return bias_.size(0); }

 private:
  torch::nn::Embedding table_;
  torch::nn::Linear output_;  // null: tied to table_
  const torch::Tensor& bias_;
};

}  // namespace

std::unique_ptr<InputEmbedding> make_table_embedding(torch::nn::Embedding table) {
  return std::make_unique<TableEmbedding>(std::move(table));
}

std::unique_ptr<OutputHead> make_full_softmax_head(torch::nn::Embedding table,
                                                   torch::nn::Linear output,
                                                   const torch::Tensor& output_bias) {
  return std::make_unique<FullSoftmaxHead>(std::move(table), std::move(output), output_bias);
}

}  // namespace txl
