// Every registered encoding through the real CLI (train, eval with each method it takes,
// sample), `txl encodings`, and the encodings' bad input: an aid the encoding does not have,
// a learned table asked past its size (eval refuses, compare shows n/a), a bad aid factor.
// Aids change the scores and the cache key.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "txl/config/encodings.h"
#include "txl/model/encodings/t5.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;

std::string tiny_corpus(const std::string& dir) {
  return testing::write_corpus(dir + "/corpus", testing::tiny_english(200),
                               testing::tiny_english(30, 1), testing::tiny_english(30, 2));
}

TEST(EncodingsCli, ListsEveryRegisteredEncoding) {
  const auto dir = testing::scratch_dir("encodings_list");
  const auto r = run_txl({"encodings", "--json", dir + "/enc.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_text(dir + "/enc.json"));
  ASSERT_EQ(j.size(), encoding_registry().size());
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& t = encoding_registry()[i];
    EXPECT_NE(r.out.find(t.formula), std::string::npos) << t.name;
    EXPECT_EQ(j[i]["name"], t.name);
    EXPECT_EQ(j[i]["memory"], t.takes_memory);
    EXPECT_EQ(j[i]["options"].size(), t.options.size());
  }
  EXPECT_NE(r.out.find("model.rope_base=10000"), std::string::npos) << r.out;
  testing::cleanup_scratch();
}

TEST(EncodingsCli, EveryEncodingTrainsEvaluatesAndSamples) {
  const auto dir = testing::scratch_dir("encodings_all");
  const auto corpus = tiny_corpus(dir);
  for (const auto& t : encoding_registry()) {
    SCOPED_TRACE(t.name);
    const auto run = dir + "/" + t.name;
    ASSERT_TRUE(testing::train_tiny_run(corpus, run, t.name));
    // Sliding windows of every encoding are checked in-process (eval_methods_test).
    for (const std::string method : {"nonoverlap", "memory"}) {
      const auto e = run_txl({"eval", "--run", run, "--lengths", "8,32", "--method", method});
      if (method == "memory" && !t.takes_memory) {
        EXPECT_EQ(e.code, 2) << e.err;
        continue;
      }
      EXPECT_EQ(e.code, 0) << method << ": " << e.err;
      EXPECT_NE(e.out.find("32"), std::string::npos) << e.out;
    }
    const auto s = run_txl({"sample", "--run", run, "--tokens", "12", "--seed", "3"});
    EXPECT_EQ(s.code, 0) << s.err;
  }
  testing::cleanup_scratch();
}

// t5 with t5_max_distance at or below t5_buckets / 2 crashed inside LibTorch ("index out of
// range") and is refused by validation now (encodings_config_test). The smallest value that
// passes, t5_buckets / 2 + 1, keeps every bucket in the table at any distance, and a model
// with it trains and evaluates at 16x its training length, with and without memory.
TEST(EncodingsCli, T5AtItsSmallestValidMaxDistanceTrainsAndEvaluatesLongWindows) {
  for (const int64_t buckets : {2, 3, 8, 32, 4096}) {
    const int64_t max_distance = buckets / 2 + 1;
    for (const int64_t n :
         {int64_t{0}, max_distance - 1, max_distance, int64_t{100000}, int64_t{1} << 40}) {
      const int64_t b = t5_bucket(n, buckets, max_distance);
      EXPECT_GE(b, 0) << buckets << " " << n;
      EXPECT_LT(b, buckets) << buckets << " " << n;
    }
    const auto d = torch::tensor({int64_t{0}, max_distance, int64_t{1} << 40});
    const auto t = t5_buckets(d, buckets, max_distance);
    EXPECT_GE(t.min().item<int64_t>(), 0) << buckets;
    EXPECT_LT(t.max().item<int64_t>(), buckets) << buckets;
  }
  const auto dir = testing::scratch_dir("encodings_t5_boundary");
  const auto corpus = tiny_corpus(dir);
  const auto run = dir + "/t5";
  ASSERT_TRUE(testing::train_tiny_run(
      corpus, run, "t5", "char", 3,
      {"--set", "model.t5_buckets=32", "--set", "model.t5_max_distance=17"}));
  for (const std::string method : {"nonoverlap", "memory"}) {
    const auto e = run_txl({"eval", "--run", run, "--lengths", "256", "--method", method, "--json",
                            dir + "/" + method + ".json"});
    ASSERT_EQ(e.code, 0) << method << ": " << e.err;
    const auto j = nlohmann::json::parse(read_text(dir + "/" + method + ".json"));
    EXPECT_TRUE(std::isfinite(j["results"][0]["ppl"].get<double>())) << e.out;
  }
  testing::cleanup_scratch();
}

TEST(EncodingsCli, AidsChangeScoresAndTheCacheAndAreRefusedWhereTheyDoNotApply) {
  const auto dir = testing::scratch_dir("encodings_aids");
  const auto corpus = tiny_corpus(dir);
  const auto rope = dir + "/rope", rel = dir + "/rel", table = dir + "/table";
  ASSERT_TRUE(testing::train_tiny_run(corpus, rope, "rope", "char", 20));
  ASSERT_TRUE(testing::train_tiny_run(corpus, rel, "relative"));
  ASSERT_TRUE(testing::train_tiny_run(corpus, table, "learned_absolute", "char", 3,
                                      {"--set", "model.max_len=16"}));

  const auto plain = run_txl({"eval", "--run", rope, "--lengths", "64", "--json", dir + "/p.json"});
  const auto pi = run_txl({"eval", "--run", rope, "--lengths", "64", "--aid", "pi", "--aid-factor",
                           "4", "--json", dir + "/pi.json"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(pi.code, 0) << pi.err;
  const auto jp = nlohmann::json::parse(read_text(dir + "/p.json"));
  const auto jpi = nlohmann::json::parse(read_text(dir + "/pi.json"));
  EXPECT_NE(jp["results"][0]["nll"], jpi["results"][0]["nll"]);
  EXPECT_EQ(jpi["results"][0]["aid"], "pi");
  EXPECT_FALSE(jp["results"][0].contains("aid"));
  EXPECT_NE(pi.out.find("pi x4"), std::string::npos) << pi.out;  // the row names the aid
  size_t aid_files = 0;
  for (const auto& f : fs::directory_iterator(rope + "/eval-cache")) {
    aid_files += f.path().filename().string().find("-Api-F4") != std::string::npos;
  }
  EXPECT_EQ(aid_files, 1u);

  struct Bad {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Bad> bad = {
      {{"eval", "--run", rel, "--aid", "yarn"},
       "--aid yarn does not apply to model.pos_encoding relative"},
      {{"eval", "--run", rope, "--aid", "interpolate"}, "its aids: pi, ntk, yarn"},
      {{"eval", "--run", rope, "--aid", "rope_scaling"}, "expected one of none, pi"},
      {{"eval", "--run", rope, "--aid", "pi", "--aid-factor", "0.5"}, "--aid-factor 0.5"},
      {{"eval", "--run", table, "--lengths", "32"}, "past the 16 positions"},
      {{"eval", "--run", table, "--lengths", "64", "--aid", "interpolate", "--aid-factor", "2"},
       "maps length 64 past the 16 positions"},
      {{"compare", rope + "@yarn:0.5", rel}, "aid factor \"0.5\""},
  };
  for (const auto& b : bad) {
    const auto r = run_txl(b.args);
    EXPECT_EQ(r.code, 2) << b.args[3] << ": " << r.err;
    EXPECT_NE(r.err.find(b.expect), std::string::npos) << r.err;
  }
  // A table run past its size: compare shows n/a there and scores the rest; with
  // @interpolate every length.
  const auto json = dir + "/c.json";
  const auto c =
      run_txl({"compare", table, table + "@interpolate", "--lengths", "8,32", "--json", json});
  ASSERT_EQ(c.code, 0) << c.err;
  const auto jc = nlohmann::json::parse(read_text(json));
  EXPECT_EQ(jc["runs"][0]["results"][1]["skipped"].get<std::string>().find("past the 16"), 0u);
  EXPECT_TRUE(jc["runs"][0]["results"][0].contains("ppl"));
  EXPECT_TRUE(jc["runs"][1]["results"][1].contains("ppl"));
  EXPECT_EQ(jc["runs"][1]["name"], "table@interpolate");
  EXPECT_TRUE(jc["paired"]["rows"][1]["skipped"].get<bool>());
  EXPECT_NE(c.out.find("n/a"), std::string::npos) << c.out;
  // eval decides each length the same way: n/a past the table, the rest scored.
  const auto ejson = dir + "/e.json";
  const auto e = run_txl({"eval", "--run", table, "--lengths", "8,32", "--json", ejson});
  ASSERT_EQ(e.code, 0) << e.err;
  const auto je = nlohmann::json::parse(read_text(ejson));
  EXPECT_TRUE(je["results"][0].contains("ppl"));
  EXPECT_EQ(je["results"][1]["skipped"].get<std::string>().find("past the 16"), 0u);
  EXPECT_EQ(je["method"], "nonoverlap");
  EXPECT_NE(e.out.find("n/a   past the 16 positions"), std::string::npos) << e.out;
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
