// t5 (Raffel et al.; the causal buckets of HF's _relative_position_bucket): a learned bias
// per head and bucket of the distance n, b[h, i, j] = T[bucket(n), h] * sqrt(D). Buckets
// 0..E-1 (E = buckets/2) are exact, the rest log-spaced up to max_distance; one table per
// layer. The sqrt(D) undoes the 1/sqrt(D) the scores carry, as x-transformers does, so a
// table that starts at N(0, init_std) can matter early in training.
#pragma once

#include "txl/model/encodings/bias.h"

namespace txl {

// bucket(n) = n for n < E, else min(E + floor(ln(n/E) / ln(max_distance/E) * (buckets - E)),
// buckets - 1), with E = buckets / 2.
int64_t t5_bucket(int64_t distance, int64_t buckets, int64_t max_distance);
torch::Tensor t5_buckets(const torch::Tensor& distances, int64_t buckets,
                         int64_t max_distance);  // int64 [...] -> int64 [...]

class T5Score : public BiasScore {
 public:
  T5Score(int64_t n_head, int64_t d_head, int64_t buckets, int64_t max_distance, double init_std);
  torch::Tensor bias(int64_t query_len, const PositionContext& pos,
                     const torch::Device& device) override;

  torch::Tensor table;  // [buckets, H]
  int64_t buckets, max_distance;

 private:
  double scale_;  // sqrt(D)
};

}  // namespace txl
