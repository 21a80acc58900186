// `txl eval` and `txl compare` end to end on tiny runs trained by the real CLI:
//  - one aligned table + JSON for two runs, the same tokens for both, the paired
//    difference over the same windows, a valid PNG and an SVG;
//  - results are cached in RUN/eval-cache and reused; evaluation never modifies the
//    checkpoint, config or vocabulary;
//  - bad input is refused (InputError, in process, before any evaluation; exit code 2 through
//    the executable) with a message naming the problem, and writes nothing;
//  - a missing gnuplot is exit code 1 with the install hint, after the JSON is written.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.h"
#include "needs_gnuplot.h"
#include "test_util.h"
#include "tiny_runs.h"
#include "txl/cli/eval_options.h"
#include "txl/eval/cache.h"
#include "txl/eval/compare_runs.h"
#include "txl/eval/plot.h"
#include "txl/eval/protocols/memory.h"
#include "txl/eval/protocols/sliding.h"
#include "txl/eval/run_eval.h"
#include "txl/run/checkpoint.h"
#include "txl/util/error.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_txl;

size_t count_files(const std::string& dir) {
  if (!fs::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

std::map<std::string, uint64_t> run_state_checksums(const std::string& run) {
  std::map<std::string, uint64_t> sums;
  for (const char* f : {"config.json", "vocab.json", "checkpoint.pt", "best.pt"}) {
    const auto path = run + "/" + f;
    if (fs::exists(path)) sums[f] = checksum_file(path);
  }
  return sums;
}

TEST(CompareCli, TableJsonPlotAndCacheOnTwoTinyRuns) {
  if (!testing::has_gnuplot()) GTEST_SKIP() << testing::kNoGnuplot;
  const auto t = testing::copied_runs("compare");  // it counts what their eval caches hold
  ASSERT_TRUE(fs::exists(t.rel + "/checkpoint.pt") && fs::exists(t.abs + "/checkpoint.pt"));
  const auto rel_before = run_state_checksums(t.rel), abs_before = run_state_checksums(t.abs);

  // eval first: its results land in the run's cache, and compare reuses them.
  const auto eval_json = t.dir + "/eval.json";
  const auto e =
      run_txl({"eval", "--run", t.rel, "--lengths", "8,16", "--per-position", "--json", eval_json});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("mean NLL per position"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("bootstrap"), std::string::npos) << e.out;
  const auto ej = nlohmann::json::parse(read_text(eval_json));
  ASSERT_EQ(ej["results"].size(), 2u);
  EXPECT_EQ(ej["results"][0]["per_position"]["mean_nll"].size(),
            8u);  // L = 8: one bucket per position
  EXPECT_EQ(ej["results"][1]["per_position"]["mean_nll"].size(), 16u);
  EXPECT_LT(ej["results"][0]["ppl_lo"].get<double>(), ej["results"][0]["ppl"].get<double>());
  EXPECT_GT(ej["results"][0]["ppl_hi"].get<double>(), ej["results"][0]["ppl"].get<double>());
  EXPECT_EQ(count_files(t.rel + "/eval-cache"), 2u);

  const auto json = t.dir + "/cmp.json", png = t.dir + "/cmp.png", svg = t.dir + "/cmp.svg";
  const auto c =
      run_txl({"compare", t.rel, t.abs, "--lengths", "8,16,32", "--json", json, "--plot", png});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("rel (relative)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("abs (absolute)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find(" *"), std::string::npos) << "training length 16 marked:\n" << c.out;
  EXPECT_NE(c.out.find("a-b"), std::string::npos) << c.out;

  const auto j = nlohmann::json::parse(read_text(json));
  EXPECT_EQ(j["method"], "nonoverlap");
  EXPECT_EQ(j["corpus"], "corpus");
  EXPECT_EQ(j["lengths"], (std::vector<int64_t>{8, 16, 32}));
  ASSERT_EQ(j["runs"].size(), 2u);
  const auto& rr = j["runs"][0]["results"];
  const auto& ar = j["runs"][1]["results"];
  ASSERT_EQ(rr.size(), 3u);
  ASSERT_EQ(ar.size(), 3u);
  EXPECT_EQ(j["runs"][0]["train_length"], 16);
  EXPECT_EQ(j["runs"][1]["encoding"], "absolute");
  EXPECT_TRUE(rr[0]["cached"].get<bool>()) << "length 8 was evaluated by txl eval before";
  EXPECT_FALSE(rr[2]["cached"].get<bool>());
  EXPECT_FALSE(ar[0]["cached"].get<bool>());
  ASSERT_EQ(j["paired"]["rows"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rr[i]["tokens"], ar[i]["tokens"]) << "both runs score the same tokens";
    EXPECT_EQ(rr[i]["windows"], ar[i]["windows"]);
    EXPECT_TRUE(rr[i].contains("bpc")) << "char runs report bpc";
    const auto& p = j["paired"]["rows"][i];
    EXPECT_NEAR(p["mean_nll_diff"].get<double>(),
                rr[i]["nll"].get<double>() - ar[i]["nll"].get<double>(), 1e-9);
    EXPECT_LE(p["diff_lo"].get<double>(), p["mean_nll_diff"].get<double>());
    EXPECT_GE(p["diff_hi"].get<double>(), p["mean_nll_diff"].get<double>());
  }
  EXPECT_NE(j["interval"]["method"].get<std::string>().find("bootstrap"), std::string::npos);
  const auto png_bytes = read_text(png);
  ASSERT_GT(png_bytes.size(), 1000u);
  EXPECT_EQ(png_bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_NE(read_text(svg).find("<svg"), std::string::npos);

  // Again: every result comes from the cache, with identical numbers.
  const auto json2 = t.dir + "/cmp2.json";
  const auto c2 = run_txl({"compare", t.rel, t.abs, "--lengths", "8,16,32", "--json", json2});
  ASSERT_EQ(c2.code, 0) << c2.err;
  const auto j2 = nlohmann::json::parse(read_text(json2));
  for (size_t r = 0; r < 2; ++r) {
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(j2["runs"][r]["results"][i]["cached"].get<bool>());
      EXPECT_EQ(j2["runs"][r]["results"][i]["nll_sum"], j["runs"][r]["results"][i]["nll_sum"]);
    }
  }
  // --no-cache evaluates again (same numbers: evaluation is deterministic).
  const auto json4 = t.dir + "/cmp4.json";
  ASSERT_EQ(
      run_txl({"compare", t.rel, t.abs, "--lengths", "8", "--no-cache", "--json", json4}).code, 0);
  const auto j4 = nlohmann::json::parse(read_text(json4));
  EXPECT_FALSE(j4["runs"][0]["results"][0]["cached"].get<bool>());
  EXPECT_EQ(j4["runs"][0]["results"][0]["nll_sum"], j["runs"][0]["results"][0]["nll_sum"]);
  // A different request is not served from the cache.
  const auto json3 = t.dir + "/cmp3.json";
  ASSERT_EQ(
      run_txl({"compare", t.rel, t.abs, "--lengths", "8", "--method", "sliding", "--json", json3})
          .code,
      0);
  EXPECT_FALSE(
      nlohmann::json::parse(read_text(json3))["runs"][0]["results"][0]["cached"].get<bool>());

  // Evaluation never touched the runs' saved state.
  EXPECT_EQ(run_state_checksums(t.rel), rel_before);
  EXPECT_EQ(run_state_checksums(t.abs), abs_before);
  testing::cleanup_scratch();
}

TEST(CompareCli, MemoryMethodMarksRunsWithoutMemoryNotApplicable) {
  const auto t = testing::shared_runs("compare_memory");
  const auto json = t.dir + "/mem.json";
  const auto c =
      run_txl({"compare", t.rel, t.abs, "--lengths", "8,16", "--method", "memory", "--json", json});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("n/a"), std::string::npos) << c.out;
  const auto j = nlohmann::json::parse(read_text(json));
  EXPECT_TRUE(j["runs"][0]["supported"].get<bool>());
  EXPECT_FALSE(j["runs"][1]["supported"].get<bool>());
  EXPECT_EQ(j["runs"][0]["results"][0][memory_setting::kMemLen], 8);
  EXPECT_FALSE(j.contains("paired"));
  // eval refuses it outright.
  const auto e = run_txl({"eval", "--run", t.abs, "--method", "memory", "--lengths", "8"});
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("absolute"), std::string::npos) << e.err;
  // Only absolute runs: nothing to compare.
  EXPECT_EQ(run_txl({"compare", t.abs, "--method", "memory", "--lengths", "8"}).code, 2);
  testing::cleanup_scratch();
}

// A copy of a real checkpoint whose header says another format version (bytes 8..11 hold
// the version as a little-endian u32, checkpoint.h).
void write_foreign_version_checkpoint(const std::string& from, const std::string& to) {
  auto bytes = read_text(from);
  ASSERT_GT(bytes.size(), 12u);
  const uint32_t other = static_cast<uint32_t>(kCheckpointVersion) + 1;
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<char>((other >> (8 * i)) & 0xFF);
  testing::write_text(to, bytes);
}

// What `txl compare RUNS...` and `txl eval --run RUN` check before they evaluate or write
// anything, called in this process: the option checks, then the library workflow.
void compare_in_process(const std::vector<std::string>& runs, const EvalCliOptions& o) {
  compare_runs({check_eval_options(o), runs});
}
void eval_in_process(const std::string& run, const EvalCliOptions& o) {
  evaluate_run({check_eval_options(o), run});
}
EvalCliOptions with_lengths(const std::string& lengths, const std::string& method = "nonoverlap") {
  EvalCliOptions o;
  o.lengths = lengths;
  o.method = method;
  return o;
}

// Runs in `dir` that cannot be evaluated, made from `rel`: one without vocab.json, one
// without a checkpoint, one whose checkpoint has another format version.
struct BrokenRuns {
  std::string no_vocab, no_ckpt, old;
};
BrokenRuns write_broken_runs(const std::string& dir, const std::string& rel) {
  const BrokenRuns b{dir + "/no_vocab", dir + "/no_ckpt", dir + "/old_version"};
  for (const auto& d : {b.no_vocab, b.no_ckpt, b.old}) {
    fs::create_directories(d);
    fs::copy_file(rel + "/config.json", d + "/config.json");
    if (d != b.no_vocab) fs::copy_file(rel + "/vocab.json", d + "/vocab.json");
  }
  write_foreign_version_checkpoint(rel + "/checkpoint.pt", b.old + "/checkpoint.pt");
  return b;
}

// A call that must throw an InputError whose message contains `message`.
struct Refusal {
  std::string shown;
  std::function<void()> call;
  std::string message;
};

// Runs that cannot be compared or evaluated: the same run twice, another vocabulary, a
// missing run, the broken ones.
std::vector<Refusal> run_refusals(const testing::TinyRuns& t, const std::string& word,
                                  const BrokenRuns& b) {
  const EvalCliOptions none;
  const auto compare = [none](std::vector<std::string> runs) {
    return [runs, none] { compare_in_process(runs, none); };
  };
  const auto eval = [none](std::string run) { return [run, none] { eval_in_process(run, none); }; };
  return {
      {"compare rel rel (issue 44)", compare({t.rel, t.abs, t.rel + "/"}),
       "is given twice (arguments 1 and 3)"},
      {"compare rel word", compare({t.rel, word}), "different vocabularies"},
      {"compare rel missing", compare({t.rel, t.dir + "/missing"}), "does not exist"},
      {"compare rel no_vocab", compare({t.rel, b.no_vocab}), "vocab.json is missing"},
      {"compare rel no_ckpt", compare({t.rel, b.no_ckpt}), "no checkpoint"},
      {"compare rel old", compare({t.rel, b.old}), "version"},
      {"eval old", eval(b.old), "version"},
      {"eval missing", eval(t.dir + "/missing"), "does not exist"},
  };
}

// Options that compare and eval refuse: lengths that are not positive integers, a stride
// longer than the window, a method or split they do not take.
std::vector<Refusal> option_refusals(const testing::TinyRuns& t) {
  const auto compare = [t](EvalCliOptions o) {
    return [t, o] { compare_in_process({t.rel, t.abs}, o); };
  };
  const auto eval = [t](EvalCliOptions o) { return [t, o] { eval_in_process(t.rel, o); }; };
  EvalCliOptions stride9 = with_lengths("8", "sliding");
  stride9.protocol_settings[sliding_setting::kStride] = 9;
  EvalCliOptions windowed;
  windowed.method = "windowed";
  EvalCliOptions train_split;
  train_split.split = "train";
  EvalCliOptions stride17 = with_lengths("16", "sliding");
  stride17.protocol_settings[sliding_setting::kStride] = 17;
  std::vector<Refusal> refusals;
  for (const char* lengths : {"0", "8,abc", "-8", "1.5", "8,,16"}) {
    refusals.push_back({std::string("--lengths ") + lengths, compare(with_lengths(lengths)),
                        "not a positive integer"});
  }
  refusals.push_back({"--stride 9 at 8", compare(stride9), "--stride"});
  refusals.push_back({"--method windowed", compare(windowed), "--method"});
  refusals.push_back({"--split train", compare(train_split), "--split"});
  refusals.push_back({"eval --stride 17 at 16", eval(stride17), "--stride"});
  refusals.push_back({"eval --lengths 16,x", eval(with_lengths("16,x")), "not a positive integer"});
  return refusals;
}

// Through the executable: a refusal from each place (a run, an option, the plot path) is
// exit code 2 and writes neither --json nor --plot.
void expect_refused_by_the_executable(const testing::TinyRuns& t, const std::string& word,
                                      const std::string& old) {
  const auto json = t.dir + "/out.json", png = t.dir + "/out.png";
  const std::vector<std::pair<std::vector<std::string>, std::string>> process_cases = {
      {{"compare", t.rel, word, "--json", json, "--plot", png}, "different vocabularies"},
      {{"compare", t.rel, t.abs, "--lengths", "8,abc", "--json", json, "--plot", png},
       "not a positive integer"},
      {{"compare", t.rel, t.abs, "--plot", t.dir + "/plot.jpg", "--json", json}, ".png"},
      {{"eval", "--run", old, "--json", json}, "version"},
  };
  for (const auto& [args, message] : process_cases) {
    const auto r = run_txl(args);
    EXPECT_EQ(r.code, 2) << args[2] << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(json)) << r.err;
    EXPECT_FALSE(fs::exists(png)) << r.err;
  }
}

TEST(CompareRuns, RunsThatCannotBeComparedAndBadOptionsAreRefusedBeforeAnyEvaluation) {
  // Private copies: no refusal may leave an eval cache in them.
  const auto t = testing::copied_runs("compare_bad");
  // A word-level run on the same corpus: another vocabulary.
  const auto word = testing::tiny_run("relative", "word");
  ASSERT_TRUE(fs::exists(word + "/checkpoint.pt"));
  const BrokenRuns broken = write_broken_runs(t.dir, t.rel);
  auto refusals = run_refusals(t, word, broken);
  for (auto& r : option_refusals(t)) refusals.push_back(std::move(r));
  for (const auto& r : refusals) {
    SCOPED_TRACE(r.shown);
    testing::expect_input_error(r.call, {r.message});
  }
  // The different-vocabulary error names both runs.
  testing::expect_input_error(
      [&] {
        compare_in_process({t.rel, word}, EvalCliOptions{});
      },
      {t.rel, word});
  // None of the refused requests evaluated anything.
  EXPECT_FALSE(fs::exists(t.rel + "/eval-cache"));
  EXPECT_FALSE(fs::exists(t.abs + "/eval-cache"));

  expect_refused_by_the_executable(t, word, broken.old);
  EXPECT_FALSE(fs::exists(t.rel + "/eval-cache"));
  testing::cleanup_scratch();
}

TEST(CompareCli, MissingGnuplotIsExitCode1AfterTheJsonIsWritten) {
  const auto t = testing::shared_runs("compare_nognuplot");
  const auto json = t.dir + "/cmp.json", png = t.dir + "/cmp.png";
  const auto r = run_txl({"compare", t.rel, t.abs, "--lengths", "8", "--json", json, "--plot", png},
                         {"PATH=" + t.dir + "/empty-path"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("gnuplot-nox"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(json));
  EXPECT_FALSE(fs::exists(png));
  EXPECT_NE(r.out.find("rel (relative)"), std::string::npos) << "the table is printed first";
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl

namespace txl {
namespace {

// A study plots ten encodings and more: no two series share colour, shape and dashes.
TEST(PlotScript, EverySeriesOfAStudyIsDrawnDistinctly) {
  PlotSpec spec;
  for (int i = 0; i < 14; ++i) spec.series.push_back({"run" + std::to_string(i), {8, 16}, {2, 3}});
  const std::string script = gnuplot_script(spec, "d.dat", "p.png", "p.svg");
  std::set<std::string> styles;
  size_t at = script.find("\nplot ");  // the series, not the grid's colour
  ASSERT_NE(at, std::string::npos) << script;
  while ((at = script.find("lc rgb '", at)) != std::string::npos) {
    const size_t end = script.find(" title", at);
    styles.insert(script.substr(at, end - at));  // colour, point type and dash type
    at = end;
  }
  EXPECT_EQ(styles.size(), 14u) << script;
  std::set<std::string> first_colours;
  for (const auto& s : styles) first_colours.insert(s.substr(0, 16));
  EXPECT_GE(first_colours.size(), 12u);  // twelve colours before any repeats
}

// A study's plots: seed intervals as bands under the lines; per-position and training
// curves on a linear x axis.
TEST(PlotScript, BandsAndLinearAxes) {
  PlotSpec spec;
  spec.bands = true;
  spec.series.push_back({"relative", {32, 64}, {5.0, 5.5}, {4.9, 5.3}, {5.1, 5.7}});
  spec.series.push_back({"absolute", {32, 64}, {6.0, 7.5}});
  const std::string banded = gnuplot_script(spec, "d.dat", "p.png", "");
  EXPECT_NE(banded.find("index 0 using 1:3:4 with filledcurves"), std::string::npos) << banded;
  EXPECT_EQ(banded.find("index 1 using 1:3:4"), std::string::npos) << "no interval, no band";
  EXPECT_LT(banded.find("filledcurves"), banded.find("index 0 using 1:2 with linespoints"));
  EXPECT_EQ(banded.find("yerrorlines"), std::string::npos);
  EXPECT_NE(banded.find("set logscale x 2"), std::string::npos);

  spec.bands = false;
  spec.log_x = false;
  spec.x_max = 512;
  spec.points = false;
  spec.series.pop_back();
  spec.series[0].lo.clear();
  spec.series[0].hi.clear();
  const std::string linear = gnuplot_script(spec, "d.dat", "p.png", "");
  EXPECT_EQ(linear.find("logscale x"), std::string::npos) << linear;
  EXPECT_NE(linear.find("set xrange [0:512]"), std::string::npos) << linear;
  EXPECT_NE(linear.find("using 1:2 with lines "), std::string::npos) << linear;
}

}  // namespace
}  // namespace txl
