// Small helpers shared by the core tests.
#pragma once

#include <torch/torch.h>

#include "txl/config/config.h"

namespace txl::testing {

// A tiny model configuration for property tests (fast on 2 cores).
inline ModelConfig tiny_model(PosEncoding encoding) {
  ModelConfig c;
  c.pos_encoding = encoding;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 2;
  c.d_head = 8;
  c.d_inner = 32;
  c.dropout = 0.0;
  c.dropatt = 0.0;
  c.max_rel_dist = 6;  // small, so clamping is exercised by the tests' lengths
  c.init_std = 0.2;    // larger than 0.02 so position terms are not negligible
  return c;
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

}  // namespace txl::testing
