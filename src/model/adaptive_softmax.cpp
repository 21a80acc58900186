// Adaptive input and adaptive softmax; the factorisation and parameter names are in
// adaptive_softmax.h.
#include "txl/model/adaptive_softmax.h"

#include <algorithm>
#include <string>

#include "txl/model/kernels.h"

namespace txl {

namespace {

torch::nn::Embedding cluster_table(int64_t words, int64_t width, double init_std) {
  torch::nn::Embedding table(words, width);
  torch::NoGradGuard no_grad;
  table->weight.normal_(0.0, init_std);
  return table;
}

// The tables of `layout`: one [V, C] without projections (div_val 1), else one per cluster.
torch::nn::ModuleList make_tables(const ClusterLayout& layout, double init_std) {
  torch::nn::ModuleList tables;
  if (!layout.projected) {
    tables->push_back(cluster_table(layout.bounds.back(), layout.widths[0], init_std));
    return tables;
  }
  for (int64_t i = 0; i < layout.clusters(); ++i)
    tables->push_back(cluster_table(layout.size(i), layout.widths[i], init_std));
  return tables;
}

torch::Tensor table_of(const torch::nn::ModuleList& tables, const ClusterLayout& layout,
                       int64_t i) {
  if (layout.projected) return tables->at<torch::nn::EmbeddingImpl>(i).weight;  // [n_i, d_i]
  return tables->at<torch::nn::EmbeddingImpl>(0).weight.narrow(0, layout.bounds[i],
                                                               layout.size(i));  // [n_i, C]
}

// ParameterDict::insert keeps the tensor as it is: a projection must ask for its gradient.
torch::Tensor new_proj(int64_t d_model, int64_t width) {
  return torch::empty({d_model, width}).normal_(0.0, kProjInitStd).requires_grad_();  // [C, d_i]
}

// rows [N, C] -> [N, n_i] logits of one cluster. `varying`: N changes from step to step (the
// rows whose target is in a tail): LibTorch's product then, not the layers' direct oneDNN
// one, which JIT-compiles a kernel for every new shape and keeps it (its cache and oneDNN's
// own): a WikiText-2 adaptive run's resident memory grew from 0.97 to 1.61 GB over 100 steps
// that way, and stayed at 0.86 GB without it, at the same speed.
torch::Tensor cluster_logits(const torch::Tensor& rows, const OutputCluster& c,
                             bool varying = false) {
  const auto x = c.proj.defined() ? torch::matmul(rows, c.proj) : rows;               // [N, d_i]
  return varying ? torch::linear(x, c.weight, c.bias) : affine(x, c.weight, c.bias);  // [N, n_i]
}

// 0, depending on `weight` and `proj` (either may be undefined): a cluster no token of the batch
// falls in still gets a (zero) gradient, so every rank of a data-parallel run all-reduces the
// same list of gradients (distributed.cpp skips undefined ones). Without gradients: none.
torch::Tensor zero_through(const torch::Tensor& weight, const torch::Tensor& proj) {
  if (!torch::GradMode::is_enabled()) return torch::Tensor();
  auto zero = weight.sum() * 0.0;
  return proj.defined() ? zero + proj.sum() * 0.0 : zero;
}

torch::ScalarType result_type(const torch::Tensor& h) {
  return h.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
}

// -log_softmax(logits)[targets]: [N, K], [N] -> [N]; token_nll's blocked float32 kernel,
// except in float64 (the oracle tests), where it is the formula.
torch::Tensor row_nll(const torch::Tensor& logits, const torch::Tensor& targets) {
  if (logits.scalar_type() != torch::kDouble) return token_nll(logits, targets);
  return -torch::log_softmax(logits, 1).gather(1, targets.unsqueeze(1)).squeeze(1);
}

// [N, c_1 + n]: the shortlist's logits, then tail cluster n's ... tail cluster 1's.
torch::Tensor head_logits(const torch::Tensor& h, const AdaptiveWeights& w) {
  return cluster_logits(h, w.clusters[0]);
}

}  // namespace

int64_t ClusterLayout::largest_tail() const {
  int64_t n = 0;
  for (int64_t i = 1; i < clusters(); ++i) n = std::max(n, size(i));
  return n;
}

ClusterLayout cluster_layout(const AdaptiveConfig& config, int64_t d_model, int64_t vocab_size) {
  ClusterLayout layout;
  layout.bounds.push_back(0);
  for (const int64_t c : config.cutoffs) layout.bounds.push_back(c);
  layout.bounds.push_back(vocab_size);
  for (size_t i = 1; i < layout.bounds.size(); ++i) {
    TORCH_CHECK(layout.bounds[i] > layout.bounds[i - 1],
                "adaptive cutoffs must increase and lie below the vocabulary's size (", vocab_size,
                "), got ", config.cutoffs);
  }
  for (int64_t i = 0; i <= config.n_clusters(); ++i) {
    layout.widths.push_back(config.width(d_model, i));
    TORCH_CHECK(layout.widths.back() > 0, "adaptive cluster ", i, " has width 0");
  }
  layout.projected = config.div_val > 1;
  return layout;
}

AdaptiveInputImpl::AdaptiveInputImpl(const AdaptiveConfig& config, int64_t d_model,
                                     int64_t vocab_size, double init_std)
    : layout_(cluster_layout(config, d_model, vocab_size)) {
  clusters = register_module("clusters", make_tables(layout_, init_std));
  projs = register_module("projs", torch::nn::ParameterDict());
  if (!layout_.projected) return;
  for (int64_t i = 0; i < layout_.clusters(); ++i)
    projs->insert(std::to_string(i), new_proj(d_model, layout_.widths[i]));
}

torch::Tensor AdaptiveInputImpl::table(int64_t cluster) const {
  return table_of(clusters, layout_, cluster);
}

torch::Tensor AdaptiveInputImpl::proj(int64_t cluster) const {
  return layout_.projected ? projs->get(std::to_string(cluster)) : torch::Tensor();
}

torch::Tensor AdaptiveInputImpl::forward(const torch::Tensor& tokens) {
  if (!layout_.projected) {
    return torch::embedding(clusters->at<torch::nn::EmbeddingImpl>(0).weight, tokens);  // [B, Q, C]
  }
  const auto flat = tokens.reshape({-1});  // [N]
  const auto p0 = proj(0);
  auto out = torch::zeros({flat.size(0), p0.size(0)}, p0.options());  // [N, C]
  for (int64_t i = 0; i < layout_.clusters(); ++i) {
    const auto in = (flat >= layout_.bounds[i]) & (flat < layout_.bounds[i + 1]);
    const auto rows = in.nonzero().squeeze(1);  // [N_i]
    if (rows.numel() == 0) {
      if (const auto zero = zero_through(table(i), proj(i)); zero.defined()) out = out + zero;
      continue;
    }
    const auto e = torch::embedding(table(i), flat.index_select(0, rows) - layout_.bounds[i]);
    // N_i changes from step to step: LibTorch's product (cluster_logits says why).
    out = out.index_copy(0, rows, torch::linear(e, proj(i)).to(out.scalar_type()));  // [N_i, C]
  }
  auto sizes = tokens.sizes().vec();
  sizes.push_back(out.size(1));
  return out.view(sizes);  // [B, Q, C]
}

AdaptiveSoftmaxImpl::AdaptiveSoftmaxImpl(const AdaptiveConfig& config, int64_t d_model,
                                         int64_t vocab_size, bool tie_weights, double init_std)
    : layout_(cluster_layout(config, d_model, vocab_size)) {
  const int64_t n = config.n_clusters();
  cluster_weight = register_parameter("cluster_weight",
                                      torch::empty({n, d_model}).normal_(0.0, init_std));  // [n, C]
  cluster_bias = register_parameter("cluster_bias", torch::zeros({n}));                    // [n]
  if (!tie_weights) clusters = register_module("clusters", make_tables(layout_, init_std));
  projs = register_module("projs", torch::nn::ParameterDict());
  if (!layout_.projected) return;
  for (int64_t i = 0; i < layout_.clusters(); ++i) {
    if (!config.tie_projs[static_cast<size_t>(i)])
      projs->insert(std::to_string(i), new_proj(d_model, layout_.widths[i]));
  }
}

AdaptiveWeights AdaptiveSoftmaxImpl::weights(const AdaptiveInputImpl& input,
                                             const torch::Tensor& bias) const {
  AdaptiveWeights w;
  w.bounds = layout_.bounds;
  for (int64_t i = 0; i < layout_.clusters(); ++i) {
    OutputCluster c;
    c.weight = clusters ? table_of(clusters, layout_, i) : input.table(i);
    c.bias = bias.narrow(0, layout_.bounds[i], layout_.size(i));
    const std::string key = std::to_string(i);
    c.proj = projs->contains(key) ? projs->get(key) : input.proj(i);
    w.clusters.push_back(c);
  }
  // The head's logits cover the shortlist and one column per tail cluster.
  OutputCluster& head = w.clusters[0];
  head.weight = torch::cat({head.weight, cluster_weight}, 0);  // [c_1 + n, C]
  head.bias = torch::cat({head.bias, cluster_bias}, 0);        // [c_1 + n]
  return w;
}

namespace {

// Each row's cluster (0 = head) and the head column its target reads.
struct TargetClusters {
  torch::Tensor cluster;  // [N]
  torch::Tensor column;   // [N]
};
TargetClusters target_clusters(const torch::Tensor& targets, const AdaptiveWeights& w) {
  const int64_t n = static_cast<int64_t>(w.clusters.size()) - 1;
  const int64_t shortlist = w.bounds[1];
  auto cluster = torch::zeros_like(targets);  // [N]
  for (int64_t i = 1; i <= n; ++i) cluster += (targets >= w.bounds[i]).to(targets.scalar_type());
  auto column = torch::where(cluster == 0, targets, cluster.neg() + (shortlist + n));  // [N]
  return {cluster, column};
}

// Rows of `width` float32 logits that fit in `budget_bytes` (at least one).
int64_t rows_within(int64_t budget_bytes, int64_t width) {
  return std::max<int64_t>(budget_bytes / (width * 4), 1);
}

// x [M, C], targets [M] -> [M]: -log_softmax(x proj weight^T + bias)[targets] in blocks of
// `block` rows: the bias is added in the loss kernel, never copied into the logits, and no more
// than one block's logits exist at once.
torch::Tensor cluster_nll(const torch::Tensor& x, const torch::Tensor& targets,
                          const OutputCluster& c, int64_t block) {
  const auto projected = c.proj.defined() ? torch::mm(x, c.proj) : x;  // [M, d_i]
  const int64_t count = x.size(0);
  auto nll = torch::empty({count}, x.options());  // [M]
  for (int64_t first = 0; first < count; first += block) {
    const int64_t m = std::min(block, count - first);
    const auto logits = torch::mm(projected.narrow(0, first, m), c.weight.t());  // [m, n_i]
    nll.narrow(0, first, m).copy_(token_nll(logits, targets.narrow(0, first, m), c.bias));
  }
  return nll;
}

}  // namespace

torch::Tensor adaptive_nll_without_grad(const torch::Tensor& h, const torch::Tensor& targets,
                                        const AdaptiveWeights& w, int64_t budget_bytes) {
  TORCH_CHECK(!torch::GradMode::is_enabled(), "adaptive_nll_without_grad: gradients are on");
  if (!h.is_cpu() || h.scalar_type() != torch::kFloat) return adaptive_nll(h, targets, w);
  const int64_t n = static_cast<int64_t>(w.clusters.size()) - 1;
  const auto [cluster, column] = target_clusters(targets, w);
  const OutputCluster& head = w.clusters[0];
  auto nll = cluster_nll(h, column, head, rows_within(budget_bytes, head.weight.size(0)));  // [N]
  for (int64_t i = 1; i <= n; ++i) {
    // Each tail's rows together, however the head's blocks fell: one product per tail block.
    const auto in = (cluster == i).nonzero().squeeze(1);  // [N_i]
    if (in.numel() == 0) continue;
    const OutputCluster& c = w.clusters[i];
    const auto tail = cluster_nll(h.index_select(0, in), targets.index_select(0, in) - w.bounds[i],
                                  c, rows_within(budget_bytes, c.weight.size(0)));  // [N_i]
    nll.index_add_(0, in, tail);
  }
  return nll;
}

torch::Tensor adaptive_nll(const torch::Tensor& h, const torch::Tensor& targets,
                           const AdaptiveWeights& w) {
  const int64_t n = static_cast<int64_t>(w.clusters.size()) - 1;
  const auto [cluster, column] = target_clusters(targets, w);
  auto nll = row_nll(head_logits(h, w), column).to(result_type(h));  // [N]
  for (int64_t i = 1; i <= n; ++i) {
    const auto rows = (cluster == i).nonzero().squeeze(1);  // [N_i]
    if (rows.numel() == 0) {
      const auto& c = w.clusters[i];
      if (const auto zero = zero_through(c.weight, c.proj); zero.defined()) nll = nll + zero;
      continue;
    }
    const auto logits =
        cluster_logits(h.index_select(0, rows), w.clusters[i], /*varying=*/true);  // [N_i, n_i]
    const auto tail = row_nll(logits, targets.index_select(0, rows) - w.bounds[i]);
    nll = nll.index_add(0, rows, tail.to(nll.scalar_type()));
  }
  return nll;
}

torch::Tensor adaptive_log_probs(const torch::Tensor& h, const AdaptiveWeights& w) {
  const int64_t n = static_cast<int64_t>(w.clusters.size()) - 1;
  const int64_t shortlist = w.bounds[1];
  const auto type = result_type(h);
  const auto head = torch::log_softmax(head_logits(h, w), 1, type);  // [N, c_1 + n]
  std::vector<torch::Tensor> parts{head.narrow(1, 0, shortlist)};    // [N, c_1]
  for (int64_t i = 1; i <= n; ++i) {
    const auto tail = torch::log_softmax(cluster_logits(h, w.clusters[i]), 1, type);  // [N, n_i]
    parts.push_back(head.narrow(1, shortlist + n - i, 1) + tail);
  }
  return torch::cat(parts, 1);  // [N, V]
}

}  // namespace txl
