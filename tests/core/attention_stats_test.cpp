// Attention statistics against attention that is known: uniform weights over K keys give
// entropy log K and the keys' mean distance, one-hot weights give entropy 0; a model whose
// queries are zero attends uniformly to every key it may see; reading the probabilities
// changes nothing the model computes, in query blocks or not.
#include "txl/probe/attention_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "txl/model/transformer.h"

namespace txl {
namespace {

TEST(AttentionStats, UniformAttentionHasEntropyLogKAndTheKeysMeanDistance) {
  constexpr int64_t kKeys = 10;
  AttentionAccumulator acc(1, 2, {2, 5});
  // One query, the last of 10 keys: distances 9..0. Head 0 uniform, head 1 on key 3.
  auto p = torch::zeros({1, 2, 1, kKeys});
  p[0][0].fill_(1.0 / kKeys);
  p[0][1][0][3] = 1.0;
  acc.observe(0, p);
  const auto s = acc.stats();
  EXPECT_NEAR(s[0][0].entropy, std::log(double(kKeys)), 1e-6);
  EXPECT_NEAR(s[0][0].distance, 4.5, 1e-6);
  EXPECT_NEAR(s[0][1].entropy, 0.0, 1e-12);
  EXPECT_NEAR(s[0][1].distance, 6.0, 1e-12);
  // Buckets of width 2: each holds 2 of the 10 distances; key 3 is at distance 6, bucket 3.
  for (int b = 0; b < 5; ++b) EXPECT_NEAR(s[0][0].profile[b], 0.2, 1e-6);
  EXPECT_NEAR(s[0][1].profile[3], 1.0, 1e-12);
}

TEST(AttentionStats, ZeroQueriesAttendUniformlyOverTheCausalKeys) {
  for (const auto encoding : {PosEncoding::kNope, PosEncoding::kAbsolute}) {
    SCOPED_TRACE(encoding_traits(encoding).name);
    torch::manual_seed(2);
    auto config = testing::tiny_model(encoding);
    TransformerLM model(config, 13);
    {
      torch::NoGradGuard no_grad;
      const int64_t hd = config.n_head * config.d_head;
      for (auto& block : *model->blocks)
        block->as<Block>()->attn->qkv->weight.narrow(0, 0, hd).zero_();
    }
    AttentionStatsRequest req;
    req.lengths = {8};
    req.windows = 3;
    req.buckets = {1, 8};
    const auto r = measure_attention_stats(model, testing::random_ids(100, 13), req);
    // Query i sees i + 1 keys uniformly: entropy log(i + 1), distance i / 2.
    double entropy = 0, distance = 0;
    for (int i = 0; i < 8; ++i) {
      entropy += std::log(i + 1.0) / 8;
      distance += i / 2.0 / 8;
    }
    ASSERT_EQ(r.lengths.size(), 1u);
    EXPECT_EQ(r.lengths[0].starts.size(), 3u);
    for (const auto& layer : r.lengths[0].heads) {
      for (const auto& head : layer) {
        EXPECT_NEAR(head.entropy, entropy, 1e-5);
        EXPECT_NEAR(head.distance, distance, 1e-5);
        // Distance 0 gets 1/(i+1) from every query i.
        double at_zero = 0;
        for (int i = 0; i < 8; ++i) at_zero += 1.0 / (i + 1) / 8;
        EXPECT_NEAR(head.profile[0], at_zero, 1e-5);
      }
    }
  }
}

TEST(AttentionStats, ObservingChangesNothingAndQueryBlocksSeeTheSame) {
  torch::manual_seed(4);
  auto config = testing::tiny_model(PosEncoding::kRelative);
  TransformerLM model(config, 13);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto tokens = torch::randint(13, {2, 12}, torch::kInt64);
  ForwardOptions plain;
  plain.targets = torch::randint(13, {2, 12}, torch::kInt64);
  plain.query_block = -1;
  const auto reference = model->forward(tokens, Memory{}, plain).nll;
  std::vector<std::vector<HeadStats>> stats[2];
  for (int blocked = 0; blocked < 2; ++blocked) {
    AttentionAccumulator acc(config.n_layer, config.n_head, {3, 4});
    ForwardOptions f = plain;
    f.observer = &acc;
    f.query_block = blocked ? 5 : -1;  // blocks of 5, 5, 2 queries
    EXPECT_LT(testing::max_abs_diff(model->forward(tokens, Memory{}, f).nll, reference), 1e-5);
    stats[blocked] = acc.stats();
  }
  for (size_t l = 0; l < stats[0].size(); ++l) {
    for (size_t h = 0; h < stats[0][l].size(); ++h) {
      EXPECT_NEAR(stats[0][l][h].entropy, stats[1][l][h].entropy, 1e-5);
      EXPECT_NEAR(stats[0][l][h].distance, stats[1][l][h].distance, 1e-5);
      for (size_t b = 0; b < 4; ++b)
        EXPECT_NEAR(stats[0][l][h].profile[b], stats[1][l][h].profile[b], 1e-5);
    }
  }
}

}  // namespace
}  // namespace txl
