// txl plot: runs' metrics.jsonl read back (eval/run_metrics.h: a resumed run as one line,
// tokens seen at a validation) and drawn (training loss and validation perplexity, or probe
// results over steps), with every refusal exit 2 and nothing written. The runs are
// hand-written metrics.jsonl files: nothing is trained.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_harness.h"
#include "needs_gnuplot.h"
#include "test_util.h"
#include "txl/eval/metrics_plots.h"
#include "txl/eval/run_metrics.h"
#include "txl/util/error.h"

namespace txl {
namespace {

using nlohmann::json;
using testing::read_text;
using testing::run_txl;
using testing::scratch_dir;
using testing::write_text;
namespace fs = std::filesystem;

std::string progress(int64_t step, double loss, int64_t tokens) {
  return json({{"step", step}, {"loss", loss}, {"lr", 1e-3}, {"tokens_seen", tokens}}).dump() +
         "\n";
}

std::string valid(int64_t step, double ppl) {
  return json({{"step", step}, {"valid_ppl", ppl}, {"valid_nll", std::log(ppl)}}).dump() + "\n";
}

// A probe line of the shape training writes: {"probe", "step", "metrics": [...]}.
std::string probe(const std::string& name, int64_t step, const json& metrics) {
  return json({{"probe", name}, {"step", step}, {"metrics", metrics}}).dump() + "\n";
}

// Steps 10..40 with a validation at 20 and 40, then a resume from 20 that logs 30..50 again
// (a file not cut back on resume): the resumed attempt replaces steps 30 and 40.
std::string resumed_metrics() {
  return progress(10, 4.0, 1000) + progress(20, 3.0, 2000) + valid(20, 30.0) +
         progress(30, 2.9, 3000) + progress(40, 2.8, 4000) + valid(40, 20.0) +
         progress(30, 2.5, 3000) + progress(40, 2.2, 4000) + valid(40, 9.0) +
         progress(50, 2.0, 5000) + valid(50, 7.0);
}

std::string write_run(const std::string& dir, const std::string& metrics) {
  write_text(dir + "/metrics.jsonl", metrics);
  return dir;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_png(const std::string& path) { return read_text(path).rfind("\x89PNG", 0) == 0; }

TEST(RunMetrics, AResumedRunReadsAsOneLineWithItsLatestAttempt) {
  const std::string dir = write_run(scratch_dir("plot_resumed") + "/run", resumed_metrics());
  const RunMetrics m = read_run_metrics(dir + "/metrics.jsonl", MetricsReading::kStrict);
  std::vector<std::pair<int64_t, double>> losses, ppls;
  for (const auto& p : m.progress) losses.emplace_back(p.step, p.loss);
  for (const auto& v : m.validations) ppls.emplace_back(v.step, v.ppl);
  EXPECT_EQ(losses, (std::vector<std::pair<int64_t, double>>{
                        {10, 4.0}, {20, 3.0}, {30, 2.5}, {40, 2.2}, {50, 2.0}}));
  EXPECT_EQ(ppls, (std::vector<std::pair<int64_t, double>>{{20, 30.0}, {40, 9.0}, {50, 7.0}}));
  // Tokens at a step: the progress line's own, else between its neighbours, else beyond.
  EXPECT_EQ(tokens_at(m, 40), 4000);
  EXPECT_EQ(tokens_at(m, 45), 4500);
  EXPECT_EQ(tokens_at(m, 60), 6000);
}

TEST(RunMetrics, AGarbledLineIsNamedByFileAndLineAndACutLastLineIsPassedOver) {
  const std::string dir = scratch_dir("plot_garbled");
  write_text(dir + "/bad.jsonl",
             progress(10, 4.0, 100) + "{\"step\": 20, \"loss\": \n" + progress(30, 3.0, 300));
  testing::expect_input_error(
      [&] { read_run_metrics(dir + "/bad.jsonl", MetricsReading::kStrict); },
      {dir + "/bad.jsonl:2: not JSON"});
  write_text(dir + "/shape.jsonl", progress(10, 4.0, 100) + "{\"step\": \"x\", \"loss\": 1}\n");
  testing::expect_input_error(
      [&] { read_run_metrics(dir + "/shape.jsonl", MetricsReading::kStrict); },
      {"shape.jsonl:2: \"step\" must be an integer"});
  // The same file read leniently (a study's report) keeps what it can.
  EXPECT_EQ(read_run_metrics(dir + "/bad.jsonl", MetricsReading::kLenient).progress.size(), 2u);
  write_text(dir + "/cut.jsonl", progress(10, 4.0, 100) + "{\"step\": 20, \"lo");
  std::string warning;
  const RunMetrics cut = read_run_metrics(dir + "/cut.jsonl", MetricsReading::kStrict, &warning);
  EXPECT_EQ(cut.progress.size(), 1u);
  EXPECT_NE(warning.find("cut.jsonl:2: a cut-off last line"), std::string::npos) << warning;
}

TEST(RunMetrics, LabelsAreTheFolderNamesMadeDistinct) {
  EXPECT_EQ(run_labels({"runs/a", "runs/b/"}), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(run_labels({"x/seed1/run", "y/seed1/run", "z"}),
            (std::vector<std::string>{"x/seed1/run", "y/seed1/run", "z"}));
}

TEST(PlotCli, DrawsLossAndValidationOfRunsOverlaidAndWritesTheSeries) {
  if (!testing::has_gnuplot()) GTEST_SKIP() << testing::kNoGnuplot;
  const std::string dir = scratch_dir("plot_draw");
  const std::string a = write_run(dir + "/a/run", resumed_metrics());
  const std::string b = write_run(dir + "/b/run", progress(10, 5.0, 800) + valid(10, 90.0) +
                                                      progress(20, 4.5, 1600) + valid(20, 60.0));
  const auto r = run_txl({"plot", a, b, "--out", dir + "/curves.png", "--json", dir + "/c.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(is_png(dir + "/curves.png"));
  EXPECT_TRUE(is_png(dir + "/curves-valid.png"));
  const json j = json::parse(read_text(dir + "/c.json"));
  ASSERT_EQ(j["plots"].size(), 2u);
  EXPECT_EQ(j["plots"][0]["file"], dir + "/curves.png");
  const json& loss = j["plots"][0]["series"];
  EXPECT_EQ(loss[0]["label"], "a/run");
  EXPECT_EQ(loss[1]["label"], "b/run");
  EXPECT_EQ(loss[0]["x"], json({10, 20, 30, 40, 50}));
  EXPECT_EQ(loss[0]["y"], json({4.0, 3.0, 2.5, 2.2, 2.0}));
  EXPECT_EQ(j["plots"][1]["series"][1]["y"], json({90.0, 60.0}));
  // By tokens seen: a validation is placed at its step's tokens.
  const auto t =
      run_txl({"plot", a, "--x", "tokens", "--out", dir + "/t.png", "--json", dir + "/t.json"});
  ASSERT_EQ(t.code, 0) << t.output;
  const json tj = json::parse(read_text(dir + "/t.json"));
  EXPECT_EQ(tj["x_axis"], "tokens");
  EXPECT_EQ(tj["plots"][1]["series"][0]["x"], json({2000, 4000, 5000}));
}

// Two probes during training, one with an x per value (a distance) and one without.
std::string probe_metrics(double gain_scale) {
  std::string text;
  for (int64_t step : {50, 100, 150}) {
    text += progress(step, 3.0 - step / 100.0, step * 100);
    text += probe("copy", step,
                  {{{"series", "copy_gain"}, {"x", 16}, {"value", gain_scale * step / 100.0}},
                   {{"series", "copy_gain"}, {"x", 64}, {"value", gain_scale * step / 200.0}}});
    text += probe("passkey", step,
                  {{{"series", "passkey_accuracy"}, {"x", nullptr}, {"value", step / 150.0}}});
  }
  return text;
}

TEST(PlotCli, ProbesDrawAPlotPerSeriesFamilyWithALinePerRunAndX) {
  if (!testing::has_gnuplot()) GTEST_SKIP() << testing::kNoGnuplot;
  const std::string dir = scratch_dir("plot_probes");
  const std::string copier = write_run(dir + "/copier", probe_metrics(1.0));
  const std::string control = write_run(dir + "/control", probe_metrics(0.1));
  const auto r = run_txl(
      {"plot", copier, control, "--probes", "--out", dir + "/p.png", "--json", dir + "/p.json"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(is_png(dir + "/p.png"));
  EXPECT_TRUE(is_png(dir + "/p-passkey_accuracy.png"));
  const json j = json::parse(read_text(dir + "/p.json"));
  ASSERT_EQ(j["plots"].size(), 2u);
  EXPECT_EQ(j["plots"][0]["name"], "copy_gain");
  const json& gain = j["plots"][0]["series"];
  ASSERT_EQ(gain.size(), 4u);  // 2 runs x 2 distances
  EXPECT_EQ(gain[0]["label"], "copier, x = 16");
  EXPECT_EQ(gain[0]["x"], json({50, 100, 150}));
  EXPECT_EQ(gain[0]["y"], json({0.5, 1.0, 1.5}));
  EXPECT_EQ(gain[3]["label"], "control, x = 64");
  EXPECT_EQ(j["plots"][1]["series"][1]["label"], "control");
}

TEST(PlotCli, ARunWithoutProbeLinesIsToldHowToGetThem) {
  const std::string dir = scratch_dir("plot_no_probes");
  const std::string run = write_run(dir + "/run", resumed_metrics());
  const auto before = files_in(dir);
  const auto r = run_txl({"plot", run, "--probes", "--out", dir + "/p.png"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("no probe results in " + run + "/metrics.jsonl"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("train.probes"), std::string::npos) << r.err;
  EXPECT_EQ(files_in(dir), before);
}

TEST(PlotCli, BadInputIsExitCode2AndWritesNothing) {
  const std::string dir = scratch_dir("plot_refusals");
  const std::string run = write_run(dir + "/run", resumed_metrics());
  const std::string empty = write_run(dir + "/empty", "");
  const std::string garbled = write_run(dir + "/garbled", progress(10, 4.0, 100) + "oops\n");
  fs::create_directories(dir + "/no_metrics");
  fs::create_directories(dir + "/out.png");
  const std::string png_run = write_run(dir + "/run.png", resumed_metrics());
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"plot", dir + "/no_metrics", "--out", dir + "/x.png"}, "has no metrics.jsonl"},
      {{"plot", empty, "--out", dir + "/x.png"}, empty + "/metrics.jsonl is empty"},
      {{"plot", garbled, "--out", dir + "/x.png"}, garbled + "/metrics.jsonl:2: not JSON"},
      {{"plot", run, "--out", dir + "/nowhere/x.png"}, "does not exist"},
      {{"plot", run, "--out", dir + "/out.png"}, "is a directory"},
      {{"plot", png_run, "--out", png_run}, "is the run directory"},
      {{"plot", run, "--out", dir + "/x.png", "--json", run + "/metrics.jsonl"}, "is the input"},
  };
  const auto before = files_in(dir);
  // All at once (each is mostly txl's start-up); their output goes outside `dir`.
  const std::string logs = scratch_dir("plot_refusals_logs");
  std::vector<pid_t> pids;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string log = logs + "/" + std::to_string(i);
    pids.push_back(testing::spawn_txl(cases[i].first, log + ".out", {}, log + ".err"));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const int code = testing::wait_txl(pids[i]);
    const std::string err = read_text(logs + "/" + std::to_string(i) + ".err");
    EXPECT_EQ(code, 2) << cases[i].second << "\n" << err;
    EXPECT_NE(err.find(cases[i].second), std::string::npos) << cases[i].second << "\n" << err;
  }
  EXPECT_EQ(files_in(dir), before);
}

}  // namespace
}  // namespace txl
