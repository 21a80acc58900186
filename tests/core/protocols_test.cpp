// The evaluation-protocol seam (eval/protocol.h): every registered protocol has every piece
// its consumers read, its plan covers each scored target exactly once, the memory estimate
// bounds what the plan forwards, and `txl protocols` lists the registry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "txl/eval/eval_memory.h"
#include "txl/eval/protocol.h"
#include "txl/probe/probe.h"
#include "txl/util/error.h"

namespace txl {
namespace {

EvalRequest request_for(EvalMethod method, int64_t length) {
  EvalRequest r;
  r.method = method;
  r.length = length;
  r.batch_tokens = 24;
  r.stride = 3;
  r.mem_len = 5;
  r.streams = 3;
  return r;
}

TEST(Protocols, EveryRegisteredProtocolHasEveryPiece) {
  ASSERT_FALSE(eval_protocols().empty());
  for (const auto& p : eval_protocols()) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(&eval_protocol(p.id), &p);
    EXPECT_EQ(parse_eval_method(p.name), p.id);
    EXPECT_EQ(to_string(p.id), p.name);
    for (const char* text : {p.name, p.description, p.cost, p.unit, p.position_note})
      ASSERT_NE(text, nullptr);
    EXPECT_GT(std::string(p.description).size(), 10u);
    EXPECT_TRUE(p.check && p.plan && p.largest_pass && p.fill_result && p.cache_key && p.setting &&
                p.json_row && p.memory_hint && p.describe_pass)
        << "a registered protocol lacks its check, plan, estimate, cache key or report rows";
    nlohmann::json key;
    p.cache_key(request_for(p.id, 8), key);
    for (const char* field : {"stride", "mem_len", "streams"}) EXPECT_TRUE(key.contains(field));
    EvalResult result;
    result.method = p.id;
    EXPECT_FALSE(p.setting(result).empty());
  }
}

// Every target 0..N-1 is scored exactly once, by a row that holds it, and the shards' plans
// together score what the whole plan scores.
TEST(Protocols, PlansScoreEveryTargetOnceAndShardsPartitionThem) {
  constexpr int64_t kTargets = 49;
  for (const auto& p : eval_protocols()) {
    for (const int64_t length : {1, 4, 16, 49, 100}) {
      for (const int64_t shards : {1, 2, 3}) {
        std::vector<int> scored(kTargets, 0);
        for (int64_t shard = 0; shard < shards; ++shard) {
          auto r = request_for(p.id, length);
          r.shard = shard;
          r.shards = shards;
          const auto plan = p.plan(r, kTargets);
          for (const auto& pass : plan.passes) {
            ASSERT_FALSE(pass.rows.empty());
            for (const auto& row : pass.rows) {
              EXPECT_EQ(row.len, pass.rows.front().len) << "rows of a pass have one length";
              ASSERT_GE(row.start, 0);
              ASSERT_LE(row.start + row.len, kTargets);
              for (int64_t t = row.start + row.skip; t < row.start + row.len; ++t) ++scored[t];
            }
          }
        }
        for (int64_t t = 0; t < kTargets; ++t)
          ASSERT_EQ(scored[t], 1) << p.name << " L=" << length << " shards=" << shards << " target "
                                  << t;
      }
    }
  }
}

TEST(Protocols, TheEstimateBoundsEveryPassThePlanMakes) {
  for (const auto& p : eval_protocols()) {
    for (const int64_t length : {1, 4, 16, 100}) {
      const auto r = request_for(p.id, length);
      const auto bound = p.largest_pass(r, 49);
      const auto planned = largest_planned_pass(p.plan(r, 49));
      EXPECT_GE(bound.batch, planned.batch) << p.name << " L=" << length;
      EXPECT_GE(bound.queries, planned.queries) << p.name << " L=" << length;
      EXPECT_GE(bound.keys, planned.queries) << p.name << " L=" << length;
    }
  }
}

TEST(Protocols, UnknownNamesNameTheKeyPathAndListTheProtocols) {
  try {
    parse_eval_method("slidng", "study.eval.methods");
    FAIL() << "an unknown protocol must be refused";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("study.eval.methods"), std::string::npos) << what;
    for (const auto& name : eval_protocol_names())
      EXPECT_NE(what.find(name), std::string::npos) << what;
  }
}

TEST(Protocols, ApplicabilityIsAskedInOnePlace) {
  ModelConfig absolute;
  absolute.pos_encoding = PosEncoding::kAbsolute;
  ModelConfig relative;
  relative.pos_encoding = PosEncoding::kRelative;
  for (const auto& p : eval_protocols()) {
    EXPECT_EQ(method_unavailable(absolute, p.id).empty(), !p.needs_memory) << p.name;
    EXPECT_EQ(method_unavailable(relative, p.id), "") << p.name;
  }
  auto r = request_for(EvalMethod::kNonOverlap, 8);
  r.aid = ExtrapolationAid::kYarn;
  EXPECT_NE(protocol_unavailable(relative, r).find("yarn"), std::string::npos);
}

TEST(Protocols, TxlProtocolsListsTheRegistry) {
  const auto dir = testing::scratch_dir("protocols_list");
  const auto r = testing::run_txl({"protocols", "--json", dir + "/p.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::read_text(dir + "/p.json"));
  ASSERT_EQ(j["protocols"].size(), eval_protocols().size());
  for (size_t i = 0; i < j["protocols"].size(); ++i) {
    const auto& p = eval_protocols()[i];
    EXPECT_EQ(j["protocols"][i]["name"], p.name);
    EXPECT_NE(r.out.find(p.description), std::string::npos) << p.name;
  }
  ASSERT_EQ(j["probes"].size(), probe_registry().size());
  for (size_t i = 0; i < j["probes"].size(); ++i) {
    const auto& p = probe_registry()[i];
    EXPECT_EQ(j["probes"][i]["name"], p.name);
    EXPECT_EQ(j["probes"][i]["options"].size(), p.options.size());
    EXPECT_NE(r.out.find(p.description), std::string::npos) << p.name;
    EXPECT_NE(r.out.find(p.cost), std::string::npos) << p.name;
  }
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
