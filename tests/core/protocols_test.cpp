// The evaluation-protocol seam (eval/protocol.h): every registered protocol has every piece
// its consumers read, its plan covers each scored target exactly once, the memory estimate
// bounds what the plan forwards, and `txl protocols` lists the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.h"
#include "test_util.h"
#include "txl/eval/eval_footprint.h"
#include "txl/eval/evaluate.h"
#include "txl/eval/protocol.h"
#include "txl/eval/protocols/memory.h"
#include "txl/eval/protocols/sliding.h"
#include "txl/probe/probe.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {
namespace {

EvalRequest request_for(const std::string& method, int64_t length) {
  EvalRequest r;
  r.protocol = method;
  r.length = length;
  r.batch_tokens = 24;
  r.settings.set(sliding_setting::kStride, 3);
  r.settings.set(memory_setting::kMemLen, 5);
  r.settings.set(memory_setting::kStreams, 3);
  return r;
}

TEST(Protocols, EveryRegisteredProtocolHasEveryPiece) {
  ASSERT_FALSE(eval_protocols().empty());
  for (const auto& p : eval_protocols()) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(&eval_protocol(p.name), &p);
    EXPECT_EQ(parse_protocol_name(p.name), p.name);
    for (const char* text : {p.name, p.description, p.cost, p.unit, p.position_note})
      ASSERT_NE(text, nullptr);
    EXPECT_GT(std::string(p.description).size(), 10u);
    EXPECT_TRUE(p.plan && p.largest_pass && p.as_trained && p.memory_hint && p.describe_pass)
        << "a registered protocol lacks its plan, estimate, training fit or memory hint";
    for (const auto& s : p.settings) {
      SCOPED_TRACE(s.name);
      for (const char* text :
           {s.name, s.flag, s.unset_text, s.unset_short, s.report, s.cache_tag, s.doc})
        ASSERT_NE(text, nullptr);
      EXPECT_EQ(std::string(s.flag).rfind("--", 0), 0u);
      EXPECT_LE(s.min, s.max);
    }
    nlohmann::json key;
    const auto r = request_for(p.name, 8);
    add_settings_to_key(p, resolved_settings(r), key);
    for (const auto& s : p.settings) EXPECT_EQ(key.contains(s.name), !s.is_switch) << s.name;
    EvalResult result;
    result.protocol = p.name;
    EXPECT_FALSE(settings_text(p, result.settings).empty());
  }
}

// A setting is declared by named parts; one that every setting needs left out is refused
// when the declaration becomes a setting, naming the setting and the part. A switch is 0 or
// 1 and off unless given.
TEST(Protocols, ASettingDeclaredWithoutAPartIsRefusedNamingIt) {
  const auto without_doc = [] {
    const ProtocolSetting s =
        number_setting("toy", "--toy").range(1, 4).unset(1, "1", "1").report("x{}").cache_tag("T");
    return s;
  };
  try {
    without_doc();
    ADD_FAILURE() << "a setting without doc() was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("toy (--toy)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("doc()"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      ProtocolSetting(number_setting("toy", "--toy").report("x{}").cache_tag("T").doc("d")),
      std::logic_error);  // no range()
  const ProtocolSetting on_off =
      switch_setting("toy", "--toy").report("toy").cache_tag("T").doc("toy: a switch");
  EXPECT_TRUE(on_off.is_switch);
  EXPECT_EQ(on_off.min, 0);
  EXPECT_EQ(on_off.max, 1);
  EXPECT_EQ(on_off.unset, 0);
  EXPECT_STREQ(on_off.unset_text, "off");
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
          auto r = request_for(p.name, length);
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
      const auto r = request_for(p.name, length);
      const auto bound = p.largest_pass(r, 49);
      const auto planned = largest_planned_pass(p.plan(r, 49));
      EXPECT_GE(bound.batch, planned.batch) << p.name << " L=" << length;
      EXPECT_GE(bound.queries, planned.queries) << p.name << " L=" << length;
      EXPECT_GE(bound.keys, planned.queries) << p.name << " L=" << length;
    }
  }
}

TEST(Protocols, UnknownNamesNameTheKeyPathAndListTheProtocols) {
  std::vector<std::string> named = {"study.eval.methods"};
  for (const auto& name : eval_protocol_names()) named.push_back(name);
  testing::expect_input_error([] { parse_protocol_name("slidng", "study.eval.methods"); }, named);
}

TEST(Protocols, ApplicabilityIsAskedInOnePlace) {
  ModelConfig absolute;
  absolute.pos_encoding = PosEncoding::kAbsolute;
  ModelConfig relative;
  relative.pos_encoding = PosEncoding::kRelative;
  for (const auto& p : eval_protocols()) {
    EXPECT_EQ(protocol_inapplicable(absolute, p.name).empty(), !p.needs_memory) << p.name;
    EXPECT_EQ(protocol_inapplicable(relative, p.name), "") << p.name;
  }
  auto r = request_for("nonoverlap", 8);
  r.aid = ExtrapolationAid::kYarn;
  EXPECT_NE(request_unavailable(relative, r).find("yarn"), std::string::npos);
}

// The seam holds: a protocol, or one of its settings, is named as a string only in its own
// files (src/eval/protocols/, and the constants naming its settings in
// include/txl/eval/protocols/). Every other file asks the registry. The few literals that
// spell the same word for something else (the training config's mem_len, a checkpoint's
// "memory" archive, a column heading) are listed by file.
TEST(Protocols, NothingOutsideTheRegistryNamesAProtocolOrItsSettings) {
  std::vector<std::string> words;
  for (const auto& p : eval_protocols()) {
    words.push_back(p.name);
    for (const auto& s : p.settings) {
      words.push_back(s.name);
      if (s.study_key) words.push_back(s.study_key);
    }
  }
  const std::set<std::pair<std::string, std::string>> other_meanings = {
      {"src/config/config_keys.cpp", "mem_len"},      // train.mem_len
      {"src/config/config_keys.cpp", "same_length"},  // train.same_length
      {"src/model/fused_attention.cpp", "mem_len"},   // the autograd node's saved value
      {"src/run/run_dir.cpp", "mem_len"},             // the training shape in origin.json
      {"src/train/bench_result.cpp", "mem_len"},      // the bench's training shape
      {"src/study/study_config.cpp", "mem_len"},      // a cell's train.mem_len
      {"src/run/checkpoint.cpp", "memory"},           // the memory layers' archive
      {"src/cli/sample_command.cpp", "memory"},       // how sample reads its context
      {"src/cli/protocols_command.cpp", "memory"},    // a column heading
      {"src/cli/encodings_command.cpp", "memory"},    // an encoding's trait
  };
  const auto found = testing::find_in_sources([&](const std::string& file, std::string line) {
    if (file.rfind("src/eval/protocols/", 0) == 0) return false;
    if (file.rfind("include/txl/eval/protocols/", 0) == 0) return false;
    const auto comment = line.find("//");
    if (comment != std::string::npos) line.erase(comment);
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) {
      return line.find('"' + w + '"') != std::string::npos && !other_meanings.count({file, w});
    });
  });
  EXPECT_TRUE(found.empty()) << "named outside src/eval/protocols/ (ask the registry):\n"
                             << join(found, "\n");
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
