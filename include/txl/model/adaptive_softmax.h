// Adaptive input and adaptive softmax (config/adaptive.h), as the Transformer-XL reference's
// AdaptiveEmbedding and ProjectedAdaptiveLogSoftmax compute them.
//
// Shapes: N rows (tokens), C = d_model, V words, clusters i = 0 (head) .. n (tails), cluster i
// holding ids [b_i, b_{i+1}) (b_0 = 0, b_i = cutoffs[i-1], b_{n+1} = V), n_i = b_{i+1} - b_i
// words of width d_i = C / div_val^i.
//
//   input:  e(w) = proj_i e_i[w - b_i] for w in cluster i (no proj with div_val 1)  -> [C]
//   head:   logits over the n_0 shortlist words and one per tail cluster: [W_0; cluster_weight]
//           applied to (h proj_0), plus [bias_0; cluster_bias]                  -> [c_1 + n]
//   log p(w) = log_softmax(head)[w]                                 for w in the head
//            = log_softmax(head)[col_i] + log_softmax(tail_i)[w - b_i]   for w in cluster i,
//   tail_i = (h proj_i) W_i^T + bias_i, col_i = c_1 + n - i: the reference reads tail cluster i's
//   logit from the head's i-th last column, so cluster_weight's rows run from cluster n to 1.
//
// Parameters (names under the model): adaptive_input.clusters.I.weight [n_i, d_i] (one table
// [V, C] with div_val 1, sliced per cluster), adaptive_input.projs.I [C, d_i] (div_val > 1 only);
// adaptive_softmax.cluster_weight [n, C], adaptive_softmax.cluster_bias [n]; with
// model.tie_weights false also adaptive_softmax.clusters.I.weight (the input's layout); with
// div_val > 1 and tie_projs[i] false adaptive_softmax.projs.I [C, d_i]. The output bias [V] is
// the model's output_bias, sliced per cluster.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "txl/config/adaptive.h"

namespace txl {

// The clusters' id ranges and widths.
struct ClusterLayout {
  std::vector<int64_t> bounds;  // b_0 = 0, c_1, ..., c_n, V: n + 2 entries
  std::vector<int64_t> widths;  // d_i: n + 1 entries
  bool projected = false;       // div_val > 1: every cluster has a projection
  int64_t clusters() const { return static_cast<int64_t>(widths.size()); }
  int64_t size(int64_t i) const { return bounds[i + 1] - bounds[i]; }
  int64_t head_size() const { return bounds[1] + clusters() - 1; }  // c_1 + n
  int64_t largest_tail() const;                                     // max n_i over i >= 1
};
ClusterLayout cluster_layout(const AdaptiveConfig& config, int64_t d_model, int64_t vocab_size);

// The reference's proj_init_std (train.py): projections start as N(0, 0.01).
inline constexpr double kProjInitStd = 0.01;

class AdaptiveInputImpl : public torch::nn::Module {
 public:
  AdaptiveInputImpl(const AdaptiveConfig& config, int64_t d_model, int64_t vocab_size,
                    double init_std);
  // tokens [B, Q] -> [B, Q, C], not yet scaled by sqrt(C) (the model scales every embedding).
  torch::Tensor forward(const torch::Tensor& tokens);
  torch::Tensor table(int64_t cluster) const;  // [n_i, d_i]
  torch::Tensor proj(int64_t cluster) const;   // [C, d_i]; undefined without projections
  const ClusterLayout& layout() const { return layout_; }

  torch::nn::ModuleList clusters{nullptr};  // Embedding per cluster (one [V, C] with div_val 1)
  torch::nn::ParameterDict projs{nullptr};  // "I" -> [C, d_i] (div_val > 1)

 private:
  ClusterLayout layout_;
};
TORCH_MODULE(AdaptiveInput);

// One output cluster's weights: logits = (h proj) weight^T + bias.
struct OutputCluster {
  torch::Tensor weight;  // [n_i, d_i]
  torch::Tensor bias;    // [n_i]
  torch::Tensor proj;    // [C, d_i]; undefined: none (h itself)
};

// Everything the factorisation reads, gathered once per pass (the tails' weights are views;
// the head's rows are joined once here, not in every block of rows).
struct AdaptiveWeights {
  std::vector<int64_t> bounds;          // as ClusterLayout::bounds
  std::vector<OutputCluster> clusters;  // n + 1, head first: the shortlist's rows, then
                                        // cluster_weight's (row c_1 + n - i: tail cluster i's)
};

class AdaptiveSoftmaxImpl : public torch::nn::Module {
 public:
  AdaptiveSoftmaxImpl(const AdaptiveConfig& config, int64_t d_model, int64_t vocab_size,
                      bool tie_weights, double init_std);
  // The weights of every cluster: the input's tables and projections where they are tied.
  AdaptiveWeights weights(const AdaptiveInputImpl& input, const torch::Tensor& bias) const;

  torch::Tensor cluster_weight;             // [n, C]
  torch::Tensor cluster_bias;               // [n]
  torch::nn::ModuleList clusters{nullptr};  // untied output tables (tie_weights false)
  torch::nn::ParameterDict projs{nullptr};  // "I" -> [C, d_i]: untied projections (div_val > 1)

 private:
  ClusterLayout layout_;
};
TORCH_MODULE(AdaptiveSoftmax);

// h [N, C], targets [N] -> [N] negative log-likelihood (float32; float64 for float64 h), with
// autograd. Only the head for every row and each tail for the rows whose target is in it.
torch::Tensor adaptive_nll(const torch::Tensor& h, const torch::Tensor& targets,
                           const AdaptiveWeights& w);
// The same without gradients, as evaluation asks for it: the head over all rows in blocks, then
// each tail over all the rows whose target falls in it (one product per tail, not one per block
// of rows), no block's logits past `budget_bytes`, the biases added in the loss kernel. Float32
// CPU rows; anything else goes to adaptive_nll.
torch::Tensor adaptive_nll_without_grad(const torch::Tensor& h, const torch::Tensor& targets,
                                        const AdaptiveWeights& w, int64_t budget_bytes);
// h [N, C] -> [N, V] log-probabilities of every word (float32; float64 for float64 h).
torch::Tensor adaptive_log_probs(const torch::Tensor& h, const AdaptiveWeights& w);

}  // namespace txl
