#include "txl/model/encodings/t5.h"

#include <algorithm>
#include <cmath>

#include "txl/model/encoding_factory.h"

namespace txl {

int64_t t5_bucket(int64_t distance, int64_t buckets, int64_t max_distance) {
  const int64_t exact = buckets / 2;
  const int64_t n = std::max<int64_t>(distance, 0);
  if (n < exact) return n;
  const double scaled = std::log(static_cast<double>(n) / exact) /
                        std::log(static_cast<double>(max_distance) / exact) *
                        static_cast<double>(buckets - exact);
  return std::min<int64_t>(exact + static_cast<int64_t>(scaled), buckets - 1);
}

torch::Tensor t5_buckets(const torch::Tensor& distances, int64_t buckets, int64_t max_distance) {
  const int64_t exact = buckets / 2;
  auto n = distances.clamp_min(0);
  // clamp_min(exact) keeps the log finite where the exact branch is taken anyway.
  auto scaled = torch::log(n.clamp_min(exact).to(torch::kFloat64) / static_cast<double>(exact)) /
                std::log(static_cast<double>(max_distance) / exact) *
                static_cast<double>(buckets - exact);
  auto far = (scaled.to(torch::kLong) + exact).clamp_max(buckets - 1);
  return torch::where(n < exact, n, far);
}

T5Score::T5Score(int64_t n_head, int64_t d_head, int64_t n_buckets, int64_t max_dist,
                 double init_std)
    : buckets(n_buckets), max_distance(max_dist), scale_(std::sqrt(static_cast<double>(d_head))) {
  table = register_parameter("table", torch::randn({n_buckets, n_head}) * init_std);
}

torch::Tensor T5Score::bias(int64_t query_len, const PositionContext& pos,
                            const torch::Device& device) {
  auto n = query_key_distances(query_len, pos.mem_len, /*clamp_len=*/0, device);    // [Q, K]
  auto index = t5_buckets(n, buckets, max_distance);                                // [Q, K]
  auto b = table.index_select(0, index.view(-1)).view({n.size(0), n.size(1), -1});  // [Q, K, H]
  return b.permute({2, 0, 1}) * scale_;                                             // [H, Q, K]
}

// How model.pos_encoding "t5" is built (encoding_factory.h).
EncodingFactory t5_factory() {
  return {[](const ModelConfig& c) {
            return std::make_shared<T5Score>(c.n_head, c.d_head,
                                             encoding_option_int(c, "t5_buckets"),
                                             encoding_option_int(c, "t5_max_distance"), c.init_std);
          },
          nullptr};
}

}  // namespace txl
