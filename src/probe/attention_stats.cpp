#include "txl/probe/attention_stats.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

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

namespace {

// A pass's sums (AttentionAccumulator::sums), or several passes' added up.
struct AttentionSums {
  std::vector<int64_t> queries;                           // [layer]
  std::vector<std::vector<double>> entropy, distance;     // [layer][head]
  std::vector<std::vector<std::vector<double>>> profile;  // [layer][head][bucket]
};

AttentionSums read_sums(const nlohmann::json& j) {
  return {j.at("queries").get<std::vector<int64_t>>(),
          j.at("entropy").get<std::vector<std::vector<double>>>(),
          j.at("distance").get<std::vector<std::vector<double>>>(),
          j.at("profile").get<std::vector<std::vector<std::vector<double>>>>()};
}

// Adds `pass` into `total` element by element, so that passes added in the one-process order
// give the same doubles however the passes were split across shards.
void add_sums(AttentionSums& total, const AttentionSums& pass) {
  if (total.queries.empty()) {
    total = pass;
    return;
  }
  if (pass.queries.size() != total.queries.size() || pass.entropy.size() != total.entropy.size())
    throw InputError("probe attention: shards of models with different layers or heads");
  for (size_t l = 0; l < total.queries.size(); ++l) {
    total.queries[l] += pass.queries[l];
    for (size_t h = 0; h < total.entropy[l].size(); ++h) {
      total.entropy[l][h] += pass.entropy.at(l).at(h);
      total.distance[l][h] += pass.distance.at(l).at(h);
      auto& row = total.profile[l][h];
      for (size_t b = 0; b < row.size(); ++b) row[b] += pass.profile.at(l).at(h).at(b);
    }
  }
}

std::vector<std::vector<HeadStats>> divide(const AttentionSums& s) {
  std::vector<std::vector<HeadStats>> out;
  for (size_t l = 0; l < s.queries.size(); ++l) {
    const double n = static_cast<double>(std::max<int64_t>(1, s.queries[l]));
    out.emplace_back();
    for (size_t h = 0; h < s.entropy[l].size(); ++h) {
      HeadStats stats;
      stats.entropy = s.entropy[l][h] / n;
      stats.distance = s.distance[l][h] / n;
      for (const double mass : s.profile[l][h]) stats.profile.push_back(mass / n);
      out.back().push_back(std::move(stats));
    }
  }
  return out;
}

std::vector<double> to_doubles(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

nlohmann::json AttentionAccumulator::sums() const {
  nlohmann::json entropy = nlohmann::json::array(), distance = nlohmann::json::array(),
                 profile = nlohmann::json::array();
  for (size_t l = 0; l < queries_.size(); ++l) {
    entropy.push_back(to_doubles(entropy_[l]));
    distance.push_back(to_doubles(distance_[l]));
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t h = 0; h < profile_[l].size(0); ++h) heads.push_back(to_doubles(profile_[l][h]));
    profile.push_back(heads);
  }
  return {
      {"queries", queries_}, {"entropy", entropy}, {"distance", distance}, {"profile", profile}};
}

std::vector<std::vector<HeadStats>> AttentionAccumulator::stats() const {
  return divide(read_sums(sums()));
}

nlohmann::json score_attention_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                     const AttentionStatsRequest& request,
                                     const ProbeShard& shard) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const auto& c = model->config();
  std::vector<WindowGroup> groups;  // windows of L + 1 tokens: L targets each
  for (const int64_t length : request.lengths) groups.push_back({request.windows, length + 1});
  const auto blocks = shard_windows(groups, request.scoring.batch_tokens, shard);
  double total = 0, done = 0;  // tokens this shard forwards
  for (size_t g = 0; g < groups.size(); ++g)
    total += double(blocks[g].second - blocks[g].first) * double(groups[g].length);
  nlohmann::json starts = nlohmann::json::array(), pieces = nlohmann::json::array();
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t length = request.lengths[g];
    if (length < 1 || length + 1 > n) {
      throw InputError(
          fmt::format("attention.lengths {} needs {} tokens of the evaluated split, which has {}",
                      length, length + 1, n));
    }
    SplitMix64 rng(request.seed ^ (static_cast<uint64_t>(length) * 0x9E3779B97F4A7C15ULL));
    const auto at = draw_positions(rng, request.windows, 0, n - length);
    starts.push_back(at);
    const int64_t per_pass = windows_per_pass(request.scoring.batch_tokens, length + 1);
    nlohmann::json records = nlohmann::json::array();
    for (int64_t first = blocks[g].first; first < blocks[g].second; first += per_pass) {
      const int64_t end = std::min(blocks[g].second, first + per_pass);
      std::vector<std::vector<int32_t>> windows;
      for (int64_t w = first; w < end; ++w)
        windows.emplace_back(ids.begin() + at[size_t(w)], ids.begin() + at[size_t(w)] + length + 1);
      AttentionAccumulator acc(c.n_layer, c.n_head, request.buckets);
      ProbeScoreOptions scoring = request.scoring;
      scoring.observer = &acc;
      score_windows(model, windows, length, scoring);  // every query: the last layer whole
      records.push_back(acc.sums());
      done += double(end - first) * double(length + 1);
      if (request.progress) request.progress(done / total);
    }
    if (!records.empty())
      pieces.push_back(shard_piece(g, blocks[g].first, blocks[g].second, std::move(records)));
  }
  return {{"starts", starts}, {"pieces", pieces}};
}

AttentionStatsResult finish_attention_stats(const std::vector<nlohmann::json>& partials,
                                            const AttentionStatsRequest& request) {
  const auto starts = common_field(partials, "starts", "attention");
  const auto passes = gather_pieces(
      partials, std::vector<int64_t>(request.lengths.size(), request.windows), "attention");
  AttentionStatsResult result;
  result.seed = request.seed;
  for (size_t g = 0; g < request.lengths.size(); ++g) {
    AttentionSums total;
    for (const auto& pass : passes[g]) add_sums(total, read_sums(pass));
    AttentionStatsAtLength at;
    at.length = request.lengths[g];
    at.starts = starts.at(g).get<std::vector<int64_t>>();
    at.buckets = request.buckets;
    at.heads = divide(total);
    result.lengths.push_back(std::move(at));
  }
  return result;
}

AttentionStatsResult measure_attention_stats(TransformerLM& model, const std::vector<int32_t>& ids,
                                             const AttentionStatsRequest& request) {
  return finish_attention_stats({score_attention_shard(model, ids, request, {})}, request);
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
