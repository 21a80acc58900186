// A model's size from its configuration (model_size.h); mirrors what block.cpp, the encodings
// and the output heads build.
#include "txl/model/model_size.h"

#include "txl/config/encodings.h"
#include "txl/model/adaptive_softmax.h"

namespace txl {

namespace {

// One block: attention (qkv and output projections, LayerNorm, the encoding's own weights
// from its traits) and the feed-forward (two biased linears, LayerNorm); mirrors block.cpp.
double block_parameters(const ModelConfig& c) {
  const double C = static_cast<double>(c.d_model), H = static_cast<double>(c.n_head),
               D = static_cast<double>(c.d_head), F = static_cast<double>(c.d_inner);
  const double hd = H * D;
  const double attention =
      C * 3 * hd + hd * C + 2 * C + encoding_traits(c.pos_encoding).layer_parameters(c);
  const double feed_forward = C * F + F + F * C + C + 2 * C;
  return attention + feed_forward;
}

}  // namespace

double input_output_parameters(const ModelConfig& c, int64_t vocab_size) {
  const double C = static_cast<double>(c.d_model), V = static_cast<double>(vocab_size);
  if (!c.adaptive) return (c.tie_weights ? 1 : 2) * V * C + V;
  const ClusterLayout layout = cluster_layout(*c.adaptive, c.d_model, vocab_size);
  const double n = static_cast<double>(layout.clusters() - 1);  // tail clusters
  double tables = 0, projs = 0;
  for (int64_t i = 0; i < layout.clusters(); ++i) {
    const double d = static_cast<double>(layout.widths[i]);
    tables += static_cast<double>(layout.size(i)) * d;
    if (!layout.projected) continue;  // div_val 1: every cluster is d_model wide
    // The input's projection, and the output's own where it is not tied to it.
    projs += (c.adaptive->tie_projs[static_cast<size_t>(i)] ? 1 : 2) * C * d;
  }
  return (c.tie_weights ? 1 : 2) * tables + projs + n * C + n + V;
}

int64_t output_row_width(const ModelConfig& c, int64_t vocab_size) {
  if (!c.adaptive) return vocab_size;
  const ClusterLayout layout = cluster_layout(*c.adaptive, c.d_model, vocab_size);
  return layout.head_size() + layout.largest_tail();
}

double output_logit_floats(const ModelConfig& c, int64_t vocab_size, double tokens) {
  return tokens * static_cast<double>(output_row_width(c, vocab_size));
}

double parameter_count(const ModelConfig& c, int64_t vocab_size) {
  const double C = static_cast<double>(c.d_model);
  double n = input_output_parameters(c, vocab_size);
  n += static_cast<double>(c.n_layer) * block_parameters(c);
  n += encoding_traits(c.pos_encoding).model_parameters(c);
  if (c.pre_norm) n += 2 * C;  // final LayerNorm
  return n;
}

}  // namespace txl
