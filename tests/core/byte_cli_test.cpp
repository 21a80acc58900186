// data.tokenizer "byte" through the real CLI: a corpus that is not valid UTF-8 trains,
// evaluates with bits per character equal to bits per byte, samples, and refuses adaptive
// softmax with exit 2.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_harness.h"
#include "txl/util/error.h"
#include "txl/util/json.h"

namespace txl {
namespace {

using testing::run_txl;

// The tiny English text with a byte cut out of a two-byte character on every tenth line.
std::string with_broken_characters(const std::string& text) {
  std::string out;
  int line = 0;
  for (const char c : text) {
    out += c;
    if (c == '\n' && ++line % 10 == 0) out += "caf\xC3 \xA9\n";
  }
  return out;
}

TEST(ByteCli, TrainsEvaluatesAndSamplesOnAnyBytes) {
  const std::string dir = testing::scratch_dir("byte");
  const std::string corpus =
      testing::write_corpus(dir + "/corpus", with_broken_characters(testing::tiny_english(300)),
                            with_broken_characters(testing::tiny_english(40, 1)),
                            with_broken_characters(testing::tiny_english(40, 2)));
  const std::string run = dir + "/run";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative", "byte"));
  const auto vocab = read_json_file(run + "/vocab.json");
  EXPECT_EQ(vocab["tokenizer"], "byte");

  const std::string json = dir + "/eval.json";
  const auto eval = run_txl({"eval", "--run", run, "--lengths", "8,16", "--json", json});
  ASSERT_EQ(eval.code, 0) << eval.err;
  EXPECT_NE(eval.out.find("bpc"), std::string::npos) << eval.out;
  const auto report = read_json_file(json);
  EXPECT_EQ(report["bytes_per_token"].get<double>(), 1.0);
  for (const auto& row : report["results"]) {
    EXPECT_NEAR(row["bpc"].get<double>(), row["nll"].get<double>() / std::log(2.0), 1e-9);
    EXPECT_NEAR(row["bpb"].get<double>(), row["bpc"].get<double>(), 1e-9);
  }

  const auto sample = run_txl({"sample", "--run", run, "--prompt", "the", "--tokens", "20"});
  ASSERT_EQ(sample.code, 0) << sample.err;
  EXPECT_EQ(sample.out.rfind("the", 0), 0u) << sample.out;
  testing::cleanup_scratch();
}

TEST(ByteCli, AdaptiveSoftmaxIsRefusedOnBytes) {
  const std::string dir = testing::scratch_dir("byte_adaptive");
  const std::string corpus = testing::write_tiny_english_corpus(dir + "/corpus");
  auto j = testing::tiny_config(corpus);
  j["data"]["tokenizer"] = "byte";
  j["model"]["adaptive"] = {{"cutoffs", {4, 8}}};
  const std::string config = testing::write_config(dir + "/config.json", j);
  const auto r = run_txl({"train", "--config", config, "--run-dir", dir + "/run"});
  EXPECT_EQ(r.code, kExitInputError) << r.err;
  EXPECT_NE(r.err.find("model.adaptive"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"byte\""), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/run"));
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
