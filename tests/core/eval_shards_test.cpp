// Sharded evaluation (data-parallel validation): the shards of every method add up to the
// whole evaluation's NLL and token count, for any number of shards, with memory streams that
// do not divide the split evenly and more shards than streams.
#include <gtest/gtest.h>

#include "test_util.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocols/memory.h"

namespace txl {
namespace {

constexpr int64_t kVocab = 13;

std::vector<int32_t> split(int64_t n) {
  std::vector<int32_t> ids;
  uint32_t state = 99;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    ids.push_back(static_cast<int32_t>((state >> 16) % kVocab));
  }
  return ids;
}

TEST(EvalShards, ShardsAddUpToTheWholeEvaluationForEveryMethod) {
  torch::manual_seed(5);
  TransformerLM model(testing::tiny_model(PosEncoding::kRelative), kVocab);
  const auto ids = split(211);  // 210 targets: 4 streams of 52, the last one 54
  for (const std::string method : {"nonoverlap", "sliding", "memory"}) {
    EvalRequest r;
    r.protocol = method;
    r.length = 16;
    r.settings.set(memory_setting::kMemLen, 16);
    r.settings.set(memory_setting::kStreams, 4);
    r.batch_tokens = 64;
    const EvalResult whole = evaluate(model, ids, r);
    for (const int64_t shards : {1, 2, 3, 4, 6}) {
      SCOPED_TRACE(method + ", " + std::to_string(shards) + " shards");
      double nll = 0.0;
      int64_t tokens = 0;
      for (int64_t s = 0; s < shards; ++s) {
        EvalRequest part = r;
        part.shard = s;
        part.shards = shards;
        const EvalResult e = evaluate(model, ids, part);
        nll += e.nll;
        tokens += e.tokens;
      }
      EXPECT_EQ(tokens, whole.tokens);
      // A shard batches its windows from its own first one, so a window may share a GEMM
      // with other rows than in the whole evaluation; some CPUs' kernels (AVX2 OpenBLAS)
      // round such rows differently in the last float bits (seen: 7e-9 relative). A lost or
      // doubled window would move the sum by percents.
      EXPECT_NEAR(nll, whole.nll, 1e-6 * std::abs(whole.nll));
    }
  }
  EvalRequest bad;
  bad.shard = 2;
  bad.shards = 2;
  EXPECT_THROW(evaluate(model, ids, bad), std::invalid_argument);
}

}  // namespace
}  // namespace txl
