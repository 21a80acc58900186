// The two Transformer-XL encodings (relative, relative_learned). Shapes: positional.h.
//
//   relative          SinusoidRelativeScore  (q + u) . k + rel_shift((q + v) . W_r R)
//   relative_learned  LearnedRelativeScore   (q + u) . k + rel_shift((q + v) . P_h T[clamp(d)])
#pragma once

#include <torch/torch.h>

#include <vector>

#include "txl/config/config.h"
#include "txl/model/position_score.h"

namespace txl {

// Shared by both relative encodings: content term with bias u, position term with bias v
// against one key vector per distance, aligned by rel_shift. No [Q, K, D] tensor is built.
class RelativeScore : public PositionScoreImpl {
 public:
  RelativeScore(int64_t n_head, int64_t d_head, double init_std);
  ScoreTerms terms(const torch::Tensor& q, const torch::Tensor& k,
                   const PositionContext& pos) override;
  // Key vectors for distances K-1, ..., 0 (scaled like q is not: raw projections). -> [H, K, D]
  virtual torch::Tensor distance_keys(int64_t key_len, const PositionContext& pos) = 0;

  torch::Tensor u;  // [H, D] content bias (r_w_bias)
  torch::Tensor v;  // [H, D] position bias (r_r_bias)

 protected:
  int64_t n_head_;
  int64_t d_head_;
  double scale_;  // 1/sqrt(D): u and v are added to unscaled q, see scores()
};

// Transformer-XL: sinusoidal R (shared, from the context) projected by this layer's W_r.
// Evaluation keeps W_r R: it depends on the weights and the distances, never on the text, so
// a segment of Q queries over M + Q keys need not project M + Q sinusoids again (at the
// published WikiText-103 layout, memory 1600, that projection was more work than the layer's
// own weights). A kept projection serves a pass with the same sinusoids (same key count, equal
// values) while the weight is the same tensor at the same version; a training-mode or
// gradient-recording pass drops them all. Only the same key count is served, never a slice of
// a longer projection: a product's rows can differ in the last bits with the number of rows, and
// an answer must not depend on which passes came before (a probe's shards equal one process).
struct KeptDistanceKeys {
  torch::Tensor sinusoids;  // [K, C] as projected
  torch::Tensor keys;       // [K, H*D] = sinusoids W_r^T
  const void* weight_data = nullptr;
  int64_t weight_version = -1;
  bool autocast = false;
};

// Bytes of keys kept per layer (the oldest go first): 16 MB holds memory 1600 + 128 keys at
// H*D = 1024 (7 MB) twice, and a query block's few key counts at smaller widths.
inline constexpr int64_t kKeptDistanceKeyBytes = int64_t{16} << 20;

class SinusoidRelativeScore : public RelativeScore {
 public:
  SinusoidRelativeScore(int64_t d_model, int64_t n_head, int64_t d_head, double init_std);
  torch::Tensor distance_keys(int64_t key_len, const PositionContext& pos) override;
  // sinusoids [K, C] -> [K, H*D], from the kept keys where they apply (evaluation).
  torch::Tensor projected_keys(const torch::Tensor& sinusoids);

  torch::nn::Linear w_r{nullptr};  // C -> H*D, no bias

 private:
  std::vector<KeptDistanceKeys> kept_;  // oldest first
};

// The model-level part of `relative`: the sinusoids R for distances K-1..0, computed and
// dropped out once per pass and shared by every layer.
class RelativeSinusoidInput : public PositionInputImpl {
 public:
  RelativeSinusoidInput(int64_t d_model, double dropout);
  torch::Tensor apply(const torch::Tensor& h, int64_t mem_len, PositionContext& pos) override;

 private:
  int64_t d_model_;
  double dropout_;
};

// The seed design: a learned table of 2*max_rel_dist-1 distance vectors [D], clamped,
// projected per head by P_h [D, D]. Only distances >= 0 reach the score under the causal
// mask; the negative half is kept so the table matches the seed's layout.
class LearnedRelativeScore : public RelativeScore {
 public:
  LearnedRelativeScore(int64_t n_head, int64_t d_head, int64_t max_rel_dist, double init_std);
  torch::Tensor distance_keys(int64_t key_len, const PositionContext& pos) override;
  // Row of `table` used for signed distance d = i - j (clamped).
  int64_t table_row(int64_t distance) const;

  torch::Tensor table;       // [2*max_rel_dist-1, D]
  torch::Tensor projection;  // [H, D, D]
  int64_t max_rel_dist;
};

}  // namespace txl
