// Attention statistics: per layer and head, at each window length,
//   entropy   mean over queries i of -sum_j p_ij log p_ij                (nats)
//   distance  mean over queries i of sum_j p_ij (i - j)                  (tokens)
//   profile   mean over queries i of the attention mass p_ij falling in each bucket of
//             distance i - j (Transformer-XL's Appendix D picture, per head)
// read from the softmax probabilities of an ordinary forward pass through an
// AttentionObserver (attention_observer.h), so the ordinary path runs unchanged. Windows of L
// tokens are drawn from the split; every query of every window counts, the early ones (which
// see few keys) included, as perplexity counts them.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "txl/model/attention_observer.h"
#include "txl/probe/probe_scoring.h"
#include "txl/probe/probe_shard.h"

namespace txl {

struct HeadStats {
  double entropy = 0.0;
  double distance = 0.0;
  std::vector<double> profile;  // [buckets], sums to 1
};

struct DistanceBuckets {
  int64_t width = 1;  // bucket b holds distances [b width, (b + 1) width); the last takes the rest
  int64_t count = 1;
};

// Sums every observed layer's statistics; stats() divides by the queries seen.
class AttentionAccumulator : public AttentionObserver {
 public:
  AttentionAccumulator(int64_t layers, int64_t heads, DistanceBuckets buckets);
  void observe(int64_t layer, const torch::Tensor& probs) override;
  std::vector<std::vector<HeadStats>> stats() const;  // [layer][head]
  // The sums before stats() divides them by the queries: per layer the queries seen, per head
  // the entropy, distance and profile summed over them (JSON, as a shard records a pass).
  nlohmann::json sums() const;

 private:
  DistanceBuckets buckets_;
  std::vector<torch::Tensor> entropy_, distance_, profile_;  // per layer: [H], [H], [H, buckets]
  std::vector<int64_t> queries_;                             // per layer
};

struct AttentionStatsRequest {
  std::vector<int64_t> lengths;
  int64_t windows = 16;  // per length
  uint64_t seed = 1;
  DistanceBuckets buckets;
  ProbeScoreOptions scoring;
  std::function<void(double)> progress;  // fraction of the tokens forwarded so far; may be empty
};

struct AttentionStatsAtLength {
  int64_t length = 0;
  std::vector<int64_t> starts;  // of the windows in the split
  DistanceBuckets buckets;
  std::vector<std::vector<HeadStats>> heads;  // [layer][head]
};

struct AttentionStatsResult {
  uint64_t seed = 0;
  std::vector<AttentionStatsAtLength> lengths;
};

// Shard `shard`'s part (probe_shard.h): per length, one group of `windows` windows, one
// record per pass (its AttentionAccumulator::sums()), so that the finish adds the passes in
// the one-process order; the windows' starts beside them. InputError when a length is
// longer than the split allows.
nlohmann::json score_attention_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                     const AttentionStatsRequest& request, const ProbeShard& shard);
// The result from every shard's partial, in shard order.
AttentionStatsResult finish_attention_stats(const std::vector<nlohmann::json>& partials,
                                            const AttentionStatsRequest& request);
// One process: the finish of shard 0 of 1.
AttentionStatsResult measure_attention_stats(TransformerLM& model, const std::vector<int32_t>& ids,
                                             const AttentionStatsRequest& request);

nlohmann::json to_json(const AttentionStatsResult& result);

}  // namespace txl
