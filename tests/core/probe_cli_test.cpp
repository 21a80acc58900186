// The probes through the real CLI: `txl eval --probes` and `txl compare --probes` run every
// registered probe on tiny runs and write their options (seed included) and metrics; every
// bad probe option is refused with exit 2 naming it, before anything is written; the
// registry is complete.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_harness.h"
#include "tiny_runs.h"
#include "txl/probe/probe.h"
#include "txl/util/text.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;

using testing::shared_runs;
using testing::small_probes;

TEST(ProbeCli, EvalRunsEveryProbeAndWritesItsSeedOptionsAndMetrics) {
  const auto t = shared_runs("probe_eval");
  const std::string json = t.dir + "/eval-probes.json";
  auto args = std::vector<std::string>{"eval",   "--run", t.rel,          "--lengths", "8,16",
                                       "--json", json,    "--probe-seed", "7"};
  for (const auto& a : small_probes()) args.push_back(a);
  const auto r = run_txl(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_text(json));
  for (const auto& probe : probe_registry()) {
    SCOPED_TRACE(probe.name);
    ASSERT_TRUE(j["probes"].contains(probe.name));
    EXPECT_EQ(j["probes"][probe.name]["options"]["seed"], 7);
    EXPECT_FALSE(j["probes"][probe.name]["metrics"].empty());
    EXPECT_NE(r.out.find(std::string("probe ") + probe.name), std::string::npos) << r.out;
    // Before it runs: its cost in tokens and the time that takes at a timed window's rate.
    const std::string before = std::string("probe ") + probe.name + ": ";
    const size_t at = r.err.find(before);
    ASSERT_NE(at, std::string::npos) << r.err;
    const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
    EXPECT_NE(line.find("tokens to forward"), std::string::npos) << line;
    EXPECT_NE(line.find(" tok/s (one pass of "), std::string::npos) << line;
  }
  EXPECT_EQ(j["probes"]["copy"]["options"]["distances"], nlohmann::json::array({2, 8}));
  // RECL of one run alone is reported as such.
  EXPECT_NE(r.out.find("RECL (tokens) [this run alone]"), std::string::npos) << r.out;
  testing::cleanup_scratch();
}

TEST(ProbeCli, CompareComputesReclOverTheRunsAsItsGroup) {
  const auto t = shared_runs("probe_compare");
  const std::string json = t.dir + "/compare-probes.json";
  const auto r = run_txl({"compare",
                          t.rel,
                          t.abs,
                          "--lengths",
                          "16",
                          "--json",
                          json,
                          "--probes",
                          "recl,copy",
                          "--probe-set",
                          "recl.first=4",
                          "--probe-set",
                          "recl.step=4",
                          "--probe-set",
                          "recl.last=12",
                          "--probe-set",
                          "recl.targets=16",
                          "--probe-set",
                          "copy.count=4",
                          "--probe-set",
                          "copy.distances=4"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_text(json));
  ASSERT_EQ(j["probes"]["recl"].size(), 2u);
  for (const auto& run : j["probes"]["recl"]) {
    int recl_rows = 0;
    for (const auto& m : run["metrics"]) {
      if (m["series"] == "RECL (tokens)") {
        ++recl_rows;
        EXPECT_GE(m["value"].get<double>(), 4);
        EXPECT_LE(m["value"].get<double>(), 12);
      }
    }
    EXPECT_EQ(recl_rows, 3) << "one RECL per default ratio (0.1, 0.5, 1)";
  }
  EXPECT_NE(r.out.find("probe recl:"), std::string::npos) << r.out;
  testing::cleanup_scratch();
}

TEST(ProbeCli, BadProbeOptionsExitTwoNamingThemAndWriteNothing) {
  const auto t = testing::copied_runs("probe_refusals");  // it proves config.json unchanged
  const std::string json = t.dir + "/never.json";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--probes", "bogus"}, "--probes"},
      {{"--probes", ""}, "--probes"},
      {{"--probes", "copy,copy"}, "twice"},
      {{"--probes", "copy", "--probe-set", "copy.count=0"}, "copy.count"},
      {{"--probes", "copy", "--probe-set", "copy.span=-1"}, "copy.span"},
      {{"--probes", "copy", "--probe-set", "copy.count=abc"}, "copy.count"},
      {{"--probes", "copy", "--probe-set", "copy.count="}, "copy.count"},
      {{"--probes", "copy", "--probe-set", "copy.count=1.5"}, "copy.count"},
      {{"--probes", "copy", "--probe-set", "copy.count=1e99"}, "copy.count"},
      {{"--probes", "copy", "--probe-set", "copy.nope=1"}, "nope"},
      {{"--probes", "copy", "--probe-set", "copycount=1"}, "PROBE.KEY=VALUES"},
      {{"--probes", "copy", "--probe-set", "passkey.trials=2"}, "passkey"},
      {{"--probes", "passkey", "--probe-set", "passkey.depths=1.5"}, "passkey.depths"},
      {{"--probes", "passkey", "--probe-set", "passkey.lengths=8"}, "passkey"},
      {{"--probes", "recl", "--probe-set", "recl.ratios=0"}, "recl.ratios"},
      {{"--probes", "recl", "--probe-set", "recl.first=20", "--probe-set", "recl.last=8"},
       "recl.first"},
      {{"--probes", "recl", "--probe-set", "recl.last=100000000"}, "recl.last"},
      {{"--probes", "copy", "--probe-set", "copy.distances=100000000"}, "copy"},
      {{"--probe-set", "copy.count=2"}, "--probes"},
      {{"--probes", "copy", "--probe-seed", "-1"}, "--probe-seed"},
      {{"--probes", "copy", "--probe-set", "copy.distances=8,8"}, "copy.distances lists 8 twice"},
      {{"--probes", "copy", "--probe-set", "copy.count=5", "--probe-set", "copy.count=6"},
       "--probe-set copy.count is given twice"},
      {{"--probes", "copy", "--probe-seed", "99999999999999999999"},
       "--probe-seed 99999999999999999999 is out of range"},
      {{"--probe-seed", "3"}, "--probe-seed 3 seeds the probes, but no --probes is given"},
      // Issue 42: a plan past the token ceiling is refused naming its options.
      {{"--probes", "copy", "--probe-set", "copy.count=100000", "--probe-set",
        "copy.distances=10000"},
       "past the 1e+09 a probe may forward"},
      {{"--probes", "copy", "--probe-max-tokens", "100"},
       "raise the ceiling with --probe-max-tokens"},
      {{"--probes", "copy", "--probe-max-tokens", "0"}, "--probe-max-tokens 0 must be >= 1"},
      {{"--probe-max-tokens", "100"}, "--probe-max-tokens needs --probes"},
      // Issue 44: probes score the model without an aid, so they are not shown under one.
      {{"--probes", "copy", "--aid", "yarn"}, "but --aid yarn applies one"},
  };
  const auto before = testing::read_text(t.rel + "/config.json");
  for (const auto& [extra, needle] : cases) {
    std::vector<std::string> args = {"eval", "--run", t.rel, "--lengths", "16", "--json", json};
    for (const auto& a : extra) args.push_back(a);
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << join(extra, " ") << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << join(extra, " ") << "\n" << r.err;
    EXPECT_FALSE(fs::exists(json)) << join(extra, " ");
  }
  EXPECT_EQ(testing::read_text(t.rel + "/config.json"), before);
  const auto r = run_txl(
      {"compare", t.rel, t.rel + "@yarn", "--lengths", "16", "--probes", "copy", "--json", json});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("but run " + t.rel + "@yarn applies one"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(json));
  testing::cleanup_scratch();
}

TEST(ProbeCli, AProbePastALearnedTableIsRefusedNamingTheOption) {
  const auto t = shared_runs("probe_table");
  const std::string table = t.dir + "/table";
  ASSERT_TRUE(testing::train_tiny_run(t.corpus, table, "learned_absolute", "char", 2,
                                      {"--set", "model.max_len=16"}));
  const auto r = run_txl({"eval", "--run", table, "--lengths", "16", "--probes", "copy",
                          "--probe-set", "copy.distances=64"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("copy.distances"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(table + "/eval-cache")) << "refused before anything is evaluated";
  testing::cleanup_scratch();
}

// Issue 44: passkey.trials=100000 built every instance in its check (a minute, 2.5 GB) before
// anything was refused. Now each probe's workload is estimated from its options first.
TEST(ProbeCli, AProbeThatCannotFitInMemoryIsRefusedBeforeAnythingIsBuilt) {
  const auto t = shared_runs("probe_memory");
  // TXL_MEMORY_LIMIT_MB caps the whole process (what LibTorch and the run hold included), so
  // the limits are set from what a txl eval holds before its probes: the first refusal says
  // what is left of 600 MB, and the rest leave it 40 MB (the evaluation needs 2).
  auto refused = [&](const std::vector<std::string>& extra, const std::string& needle,
                     int64_t limit_mb) {
    std::vector<std::string> args = {"eval", "--run", t.rel, "--lengths", "16"};
    for (const auto& a : extra) args.push_back(a);
    const auto started = std::chrono::steady_clock::now();
    const auto r = run_txl(args, {"TXL_MEMORY_LIMIT_MB=" + std::to_string(limit_mb)});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(r.code, 2) << join(extra, " ") << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << join(extra, " ") << "\n" << r.err;
    EXPECT_NE(r.err.find("of memory is available"), std::string::npos) << r.err;
    EXPECT_LT(seconds, 20.0) << join(extra, " ") << ": refused only after building";
    return r.err;
  };
  const std::string first = refused({"--probes", "passkey", "--probe-set", "passkey.trials=100000",
                                     "--probe-set", "passkey.lengths=32,64,128,256"},
                                    "probe passkey: 100000 windows of 256 tokens need about", 600);
  const size_t at = first.find("but only ");
  ASSERT_NE(at, std::string::npos) << first;
  const int64_t held = 600 - std::stoll(first.substr(at + 9));  // MB the process holds
  const int64_t limit = held + 40;
  refused(
      {"--probes", "copy", "--probe-set", "copy.count=100000", "--probe-set", "copy.distances=16"},
      "probe copy: 200000 windows of 48 tokens", limit);
  refused({"--probes", "recl", "--probe-set", "recl.targets=1000000"}, "probe recl:", limit);
  refused({"--probes", "attention", "--probe-set", "attention.windows=100000", "--probe-set",
           "attention.lengths=16,64,256,1024"},
          "probe attention:", limit);
  // The same options with the memory they need are accepted (passkey at a size that runs fast).
  const auto ok = run_txl({"eval", "--run", t.rel, "--lengths", "16", "--probes", "passkey",
                           "--probe-set", "passkey.trials=3", "--probe-set", "passkey.lengths=32"},
                          {"TXL_MEMORY_LIMIT_MB=" + std::to_string(limit)});
  EXPECT_EQ(ok.code, 0) << ok.err;
  testing::cleanup_scratch();
}

TEST(ProbeCli, EveryRegisteredProbeHasEveryPiece) {
  ASSERT_FALSE(probe_registry().empty());
  std::set<std::string> names;
  for (const auto& p : probe_registry()) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(p.name && p.description && p.cost);
    EXPECT_TRUE(names.insert(p.name).second) << "registered twice";
    EXPECT_TRUE(p.defaults && p.check && p.workload && p.score && p.finish)
        << "a probe lacks its defaults, check, workload, score or finish";
    EXPECT_FALSE(p.options.empty());
    for (const auto& o : p.options) EXPECT_LE(o.min, o.max) << o.key;
  }
}

}  // namespace
}  // namespace txl
