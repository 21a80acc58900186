// Probes during training (issue 58, train/train_probes.h): train.probes read as --probes and
// --probe-set are, their metrics.jsonl lines, a run with probes that logs bit for bit the
// losses of the same run without them (stopped and resumed too), and the refusals (an unknown
// probe, an interval below 1, a plan past train.probe_max_tokens) exit 2 naming the key,
// before a run directory exists.
#include "txl/train/train_probes.h"

#include <gtest/gtest.h>

#include <string>

#include "cli_harness.h"
#include "txl/config/config.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using testing::fresh_dir;
using testing::read_losses;
using testing::read_metrics;
using testing::run_txl;
using testing::tiny_config;
using testing::write_config;
using testing::write_text;
using testing::write_tiny_corpus;

constexpr const char* kProbes = "copy copy.span=2 copy.distances=2,4 copy.count=3";

// The tiny corpus with a validation split long enough for the copy instances above.
std::string probe_corpus(const std::string& root) {
  const std::string dir = write_tiny_corpus(root + "/corpus");
  std::string valid;
  for (int i = 0; i < 6; ++i)
    valid += "the lazy cat jumps over the quick dog.\nbirds sat at dawn.\n";
  write_text(dir + "/valid.txt", valid);
  return dir;
}

// The metrics.jsonl lines of `probe`, by step.
std::map<int64_t, nlohmann::json> probe_lines(const std::string& run, const std::string& probe) {
  std::map<int64_t, nlohmann::json> lines;
  for (const auto& j : read_metrics(run)) {
    if (!j.contains("probe")) continue;
    EXPECT_EQ(j.at("probe"), probe);
    const int64_t step = j.at("step").get<int64_t>();
    EXPECT_EQ(lines.count(step), 0u) << "step " << step << " probed twice in " << run;
    lines[step] = j;
  }
  return lines;
}

// The validation perplexities of a run, by step.
std::map<int64_t, double> valid_ppls(const std::string& run) {
  std::map<int64_t, double> ppl;
  for (const auto& j : read_metrics(run)) {
    if (j.contains("valid_ppl")) ppl[j.at("step").get<int64_t>()] = j.at("valid_ppl").get<double>();
  }
  return ppl;
}

TEST(TrainProbes, TrainProbesReadsAsProbesAndProbeSet) {
  TrainConfig train;
  EXPECT_TRUE(train_probe_request(train).names.empty());
  train.probes = "copy,passkey  copy.distances=16,32 passkey.trials=2";
  const ProbeRequest r = train_probe_request(train);
  EXPECT_EQ(r.names, (std::vector<std::string>{"copy", "passkey"}));
  EXPECT_EQ(r.settings.at("copy").at("distances"), (std::vector<double>{16, 32}));
  EXPECT_EQ(r.settings.at("passkey").at("trials"), (std::vector<double>{2}));
  const auto refused = [&](const std::string& value, const std::string& says) {
    train.probes = value;
    try {
      train_probe_request(train);
      ADD_FAILURE() << value << " was accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("train.probes"), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
    }
  };
  refused("cpy", "\"cpy\" is not a probe");
  refused("copy.count=3", "must start with the probe names");
  refused("copy passkey.trials=2", "which train.probes does not list");
  refused("copy copy.spam=2", "has no option \"spam\"");
  refused("copy copy.count=0", "copy.count = 0 is not valid");
}

TEST(TrainProbes, AMetricsLineHoldsProbeStepMetricsAndSeconds) {
  ProbeOutput out;
  out.name = "copy";
  out.seconds = 0.5;
  out.run.metrics.push_back({"copy gain (nats/token)", "d", 16, 1.25});
  out.run.metrics.push_back({"copy gain (nats/token)", "d", std::nan(""), 2.5});
  const nlohmann::json line = train_probe_line(out, 300);
  const std::string gain = "copy gain (nats/token)";
  const nlohmann::json expected = {{"probe", "copy"},
                                   {"step", 300},
                                   {"metrics",
                                    {{{"series", gain}, {"x", 16.0}, {"value", 1.25}},
                                     {{"series", gain}, {"x", nullptr}, {"value", 2.5}}}},
                                   {"seconds", 0.5}};
  EXPECT_EQ(line, expected) << line.dump();
}

TEST(TrainProbes, ProbesLeaveTheLossesBitForBitAndResumeExactly) {
  const std::string root = fresh_dir("train_probes_resume");
  auto config = tiny_config(probe_corpus(root));
  config["train"]["max_steps"] = 20;
  const std::string plain_config = write_config(root + "/plain.json", config);
  config["train"]["probes"] = kProbes;
  config["train"]["probe_interval"] = 5;
  const std::string probed_config = write_config(root + "/probed.json", config);

  const auto plain = run_txl({"train", "--config", plain_config, "--run-dir", root + "/plain"});
  ASSERT_EQ(plain.code, 0) << plain.output;
  const auto probed = run_txl({"train", "--config", probed_config, "--run-dir", root + "/probed"});
  ASSERT_EQ(probed.code, 0) << probed.output;
  EXPECT_NE(probed.err.find("probe @ step     10 | copy: copy gain (nats/token)"),
            std::string::npos)
      << probed.err;
  const auto stopped = run_txl({"train", "--config", probed_config, "--run-dir", root + "/resumed"},
                               {"TXL_INJECT_STOP_AT_STEP=12"});
  ASSERT_EQ(stopped.code, 130) << stopped.output;
  const auto resumed = run_txl({"train", "--resume", root + "/resumed"});
  ASSERT_EQ(resumed.code, 0) << resumed.output;

  const auto losses = read_losses(root + "/plain");
  ASSERT_EQ(losses.size(), 20u);
  EXPECT_EQ(read_losses(root + "/probed"), losses);  // exact: doubles compared with ==
  EXPECT_EQ(read_losses(root + "/resumed"), losses);
  EXPECT_EQ(valid_ppls(root + "/probed"), valid_ppls(root + "/plain"));
  EXPECT_EQ(valid_ppls(root + "/resumed"), valid_ppls(root + "/plain"));
  EXPECT_TRUE(probe_lines(root + "/plain", "copy").empty());
  const auto lines = probe_lines(root + "/probed", "copy");
  ASSERT_EQ(lines.size(), 4u);  // steps 5, 10, 15, 20
  for (const auto& [step, line] : lines) {
    EXPECT_EQ(step % 5, 0);
    ASSERT_EQ(line.at("metrics").size(), 6u) << line.dump();  // gain, NLLs: 3 series x 2 d
    EXPECT_EQ(line.at("metrics")[0].at("series"), "copy gain (nats/token)");
    EXPECT_EQ(line.at("metrics")[0].at("x"), 2.0);
    EXPECT_TRUE(line.at("metrics")[0].at("value").is_number());
  }
  // The resumed run probes what the uninterrupted one did, at the same steps, once each.
  const auto resumed_lines = probe_lines(root + "/resumed", "copy");
  ASSERT_EQ(resumed_lines.size(), lines.size());
  for (const auto& [step, line] : lines)
    EXPECT_EQ(resumed_lines.at(step).at("metrics"), line.at("metrics")) << "step " << step;
}

TEST(TrainProbes, RefusalsNameTheKeyAndWriteNothing) {
  const std::string root = fresh_dir("train_probes_refusals");
  const std::string config = write_config(root + "/config.json", tiny_config(probe_corpus(root)));
  const auto refused = [&](const std::vector<std::string>& sets, const std::string& says) {
    const std::string run = root + "/run";
    std::vector<std::string> args = {"train", "--config", config, "--run-dir", run};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(testing::cli_fs::exists(run)) << "a refusal made " << run;
  };
  refused({"train.probes=copy,nope"}, "train.probes \"nope\" is not a probe");
  refused({std::string("train.probes=") + kProbes, "train.probe_interval=0"},
          "train.probe_interval (0) must be >= 1");
  // 40 steps / 5 = 8 runs x (2 x 3 x (6 + 8) = 84 tokens) = 672 tokens, past 500.
  refused({std::string("train.probes=") + kProbes, "train.probe_interval=5",
           "train.probe_max_tokens=500"},
          "8 probe runs (every train.probe_interval = 5 steps of train.max_steps = 40) x 84 "
          "tokens each (copy 84 (2 x count x sum over d of (2 span + d) tokens forwarded)) = 672 "
          "tokens forwarded, past train.probe_max_tokens = 500");
}

TEST(TrainProbes, AStudyCellCarriesItsProbesOverSteps) {
  const std::string root = fresh_dir("train_probes_study");
  auto base = tiny_config(probe_corpus(root));
  base["train"]["max_steps"] = 10;
  base["train"]["probes"] = kProbes;
  base["train"]["probe_interval"] = 5;
  const nlohmann::json study = {
      {"base", base},
      {"grid", {{"model.pos_encoding", {"relative"}}, {"train.seed", {1, 2}}}},
      {"eval", {{"methods", {"nonoverlap"}}, {"lengths", {8}}}}};
  const std::string config = write_config(root + "/study.json", study);
  const auto r = run_txl({"study", "--config", config, "--out", root + "/out"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto results = nlohmann::json::parse(testing::read_text(root + "/out/results.json"));
  ASSERT_EQ(results.at("cells").size(), 2u);
  for (const auto& cell : results.at("cells")) {
    const auto& rows = cell.at("probes_over_steps");
    ASSERT_EQ(rows.size(), 12u) << rows.dump();  // 2 steps x 3 series x 2 distances
    // The rows are the run's own metrics.jsonl lines, flattened.
    const auto lines =
        probe_lines(root + "/out/runs/" + cell.at("name").get<std::string>(), "copy");
    size_t i = 0;
    for (const auto& [step, line] : lines) {
      for (const auto& m : line.at("metrics")) {
        ASSERT_LT(i, rows.size());
        EXPECT_EQ(rows[i].at("probe"), "copy");
        EXPECT_EQ(rows[i].at("step"), step);
        EXPECT_EQ(rows[i].at("series"), m.at("series"));
        EXPECT_EQ(rows[i].at("x"), m.at("x"));
        EXPECT_EQ(rows[i].at("value"), m.at("value"));
        ++i;
      }
    }
    EXPECT_EQ(i, rows.size());
  }
  // A cell whose train.probes cannot run is refused before any cell trains.
  nlohmann::json bad = study;
  bad["base"]["train"]["probes"] = "copy copy.distances=4000";
  const auto refused = run_txl(
      {"study", "--config", write_config(root + "/bad.json", bad), "--out", root + "/bad-out"});
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.err.find("train.probes"), std::string::npos) << refused.err;
  EXPECT_FALSE(testing::cli_fs::exists(root + "/bad-out/runs"));
}

}  // namespace
}  // namespace txl
