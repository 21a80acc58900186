#include "txl/probe/attention_stats.h"

#include <spdlog/fmt/fmt.h>

#include "txl/util/error.h"

namespace txl {

AttentionAccumulator::AttentionAccumulator(int64_t layers, int64_t heads, DistanceBuckets buckets)
    : buckets_(buckets), queries_(static_cast<size_t>(layers), 0) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (int64_t l = 0; l < layers; ++l) {
    entropy_.push_back(torch::zeros({heads}, f64));
    distance_.push_back(torch::zeros({heads}, f64));
    profile_.push_back(torch::zeros({heads, buckets.count}, f64));
  }
}

void AttentionAccumulator::observe(int64_t layer, const torch::Tensor& probs) {
  torch::NoGradGuard no_grad;
  const auto l = static_cast<size_t>(layer);
  const int64_t batch = probs.size(0), heads = probs.size(1), q = probs.size(2),
                keys = probs.size(3);
  // Query i of the block sits at key position keys - q + i; masked keys (j > i) have p = 0.
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(probs.device());
  const auto i = torch::arange(keys - q, keys, opts).unsqueeze(1);  // [q, 1]
  const auto j = torch::arange(0, keys, opts).unsqueeze(0);         // [1, K]
  const auto dist = (i - j).clamp_min(0);                           // [q, K]
  const auto bucket = torch::floor(dist / static_cast<double>(buckets_.width))
                          .clamp_max(static_cast<double>(buckets_.count - 1))
                          .to(torch::kInt64)
                          .reshape({-1});  // [q K]
  // One window at a time, so that a float copy of all the probabilities never exists.
  for (int64_t b = 0; b < batch; ++b) {
    const auto p = probs[b].to(torch::kFloat32);  // [H, q, K]
    const auto plogp = torch::where(p > 0, p * torch::log(p), torch::zeros_like(p));
    entropy_[l] -= plogp.sum({1, 2}).to(torch::kCPU, torch::kFloat64);
    distance_[l] += (p * dist).sum({1, 2}).to(torch::kCPU, torch::kFloat64);
    auto mass = torch::zeros({heads, buckets_.count}, opts);
    mass.index_add_(1, bucket, p.reshape({heads, q * keys}));
    profile_[l] += mass.to(torch::kCPU, torch::kFloat64);
  }
  queries_[l] += batch * q;
}

std::vector<std::vector<HeadStats>> AttentionAccumulator::stats() const {
  std::vector<std::vector<HeadStats>> out;
  for (size_t l = 0; l < queries_.size(); ++l) {
    const double n = static_cast<double>(std::max<int64_t>(1, queries_[l]));
    out.emplace_back();
    for (int64_t h = 0; h < entropy_[l].size(0); ++h) {
      HeadStats s;
      s.entropy = entropy_[l][h].item<double>() / n;
      s.distance = distance_[l][h].item<double>() / n;
      const auto row = profile_[l][h].contiguous();
      for (int64_t b = 0; b < row.size(0); ++b) s.profile.push_back(row[b].item<double>() / n);
      out.back().push_back(std::move(s));
    }
  }
  return out;
}

AttentionStatsResult measure_attention_stats(TransformerLM& model, const std::vector<int32_t>& ids,
                                             const AttentionStatsRequest& request) {
  const int64_t n = static_cast<int64_t>(ids.size());
  AttentionStatsResult result;
  result.seed = request.seed;
  const auto& c = model->config();
  double total = 0, done = 0;  // tokens forwarded
  for (const int64_t length : request.lengths) total += static_cast<double>(length);
  for (const int64_t length : request.lengths) {
    if (length < 1 || length + 1 > n) {
      throw InputError(
          fmt::format("attention.lengths {} needs {} tokens of the evaluated split, "
                      "which has {}",
                      length, length + 1, n));
    }
    SplitMix64 rng(request.seed ^ (static_cast<uint64_t>(length) * 0x9E3779B97F4A7C15ULL));
    AttentionStatsAtLength at;
    at.length = length;
    at.buckets = request.buckets;
    at.starts = draw_positions(rng, request.windows, 0, n - length);
    std::vector<std::vector<int32_t>> windows;
    for (const int64_t s : at.starts)
      windows.emplace_back(ids.begin() + s, ids.begin() + s + length + 1);
    AttentionAccumulator acc(c.n_layer, c.n_head, request.buckets);
    ProbeScoreOptions scoring = request.scoring;
    scoring.observer = &acc;
    score_windows(model, windows, length, scoring);  // every query: the last layer whole
    at.heads = acc.stats();
    result.lengths.push_back(std::move(at));
    done += static_cast<double>(length);
    if (request.progress) request.progress(done / total);
  }
  return result;
}

nlohmann::json to_json(const AttentionStatsResult& r) {
  nlohmann::json lengths = nlohmann::json::array();
  for (const auto& at : r.lengths) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& layer : at.heads) {
      nlohmann::json heads = nlohmann::json::array();
      for (const auto& h : layer)
        heads.push_back({{"entropy", h.entropy}, {"distance", h.distance}, {"profile", h.profile}});
      layers.push_back(heads);
    }
    lengths.push_back({{"length", at.length},
                       {"windows", at.starts.size()},
                       {"bucket_width", at.buckets.width},
                       {"buckets", at.buckets.count},
                       {"layers", layers}});
  }
  return {{"seed", r.seed}, {"lengths", lengths}};
}

}  // namespace txl
