// `txl study` end to end on a tiny corpus: 2 encodings x 2 seeds. The report and results
// hold every cell and number; an interrupted study (SIGINT, and SIGKILL in the middle of a
// cell) continued by the same command, per-cell runs followed by --report, and --jobs 2 all
// give the numbers of one uninterrupted study; bad input writes nothing.
#include <gtest/gtest.h>

#include "cli_harness.h"
#include "needs_gnuplot.h"

namespace txl::testing {
namespace {

using nlohmann::json;

struct StudyFixture {
  std::string root;
  std::string config;  // the study config
};

StudyFixture make_study(const std::string& name, int steps = 20) {
  StudyFixture f;
  f.root = fresh_dir(name);
  const std::string corpus = write_tiny_corpus(f.root + "/corpus");
  json base = tiny_config(corpus);
  base["train"]["max_steps"] = steps;
  base["train"]["eval_interval"] = 5;
  base["train"]["log_interval"] = 5;
  const json study = {
      {"base", base},
      {"grid", {{"model.pos_encoding", {"relative", "alibi"}}, {"train.seed", {1, 2}}}},
      {"eval", {{"methods", {"nonoverlap", "memory"}}, {"lengths", {4, 8, 16}}}}};
  f.config = write_config(f.root + "/study.json", study);
  return f;
}

// results.json without what depends on the clock or the invocation.
json numbers(const std::string& dir) {
  json j = json::parse(read_text(dir + "/results.json"));
  for (auto& cell : j["cells"]) cell.erase("timing");
  return j;
}

CliResult study(const StudyFixture& f, const std::string& out, std::vector<std::string> extra = {},
                const std::vector<std::string>& env = {}) {
  std::vector<std::string> args = {"study", "--config", f.config, "--out", out};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_txl(args, env);
}

// A length past the valid split (57 targets here) scores the whole split as one window; the
// report says so instead of labelling the row with a window it never scored.
TEST(StudyCli, ALengthPastTheSplitIsNotedInTheReport) {
  auto f = make_study("study_short_split", 2);
  json spec = json::parse(read_text(f.config));
  spec["grid"] = {{"model.pos_encoding", {"relative"}}, {"train.seed", {1}}};
  spec["eval"] = {{"methods", {"nonoverlap"}}, {"lengths", {8, 64}}};
  write_config(f.config, spec);
  const std::string out = f.root + "/out";
  const auto r = study(f, out);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string report = read_text(out + "/report.md");
  EXPECT_NE(report.find("- Note: length 64: only 57 tokens were scored"), std::string::npos)
      << report;
  EXPECT_EQ(report.find("- Note: length 8"), std::string::npos) << report;
}

TEST(StudyCli, ReportAndResultsHoldEveryCellAndNumber) {
  const auto f = make_study("study_full");
  const std::string out = f.root + "/out";
  const auto r = study(f, out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = numbers(out);
  ASSERT_EQ(j["cells"].size(), 4u);
  EXPECT_EQ(j["protocols"], json({"nonoverlap", "memory"}));
  EXPECT_EQ(j["baseline"], "relative");
  EXPECT_TRUE(j["missing_cells"].empty());
  EXPECT_NE(j["statistics"]["method"].get<std::string>().find("Student t"), std::string::npos);
  const std::string report = read_text(out + "/report.md");
  for (const char* cell : {"relative-seed1", "relative-seed2", "alibi-seed1", "alibi-seed2"}) {
    EXPECT_NE(report.find(std::string("| ") + cell + " |"), std::string::npos) << cell;
    EXPECT_TRUE(cli_fs::is_regular_file(out + "/runs/" + cell + "/checkpoint.pt")) << cell;
  }
  for (const auto& cell : j["cells"]) {
    ASSERT_EQ(cell["results"].size(), 6u);  // 2 protocols x 3 lengths
    EXPECT_EQ(cell["steps"], 20);
  }
  // Every group row's perplexity appears in the report's tables as printed there.
  for (const auto& g : j["groups"]) {
    for (const auto& p : g["protocols"]) {
      for (const auto& row : p["rows"]) {
        ASSERT_TRUE(row.contains("ppl")) << row.dump();
        EXPECT_EQ(row["seeds"], 2);
        EXPECT_EQ(row["interval"], "seeds");
        char text[32];
        std::snprintf(text, sizeof text, "%.2f [", row["ppl"].get<double>());
        EXPECT_NE(report.find(text), std::string::npos) << text;
      }
    }
  }
  if (has_gnuplot()) {
    EXPECT_NE(report.find("![perplexity against length, nonoverlap](plots/ppl-nonoverlap.png)"),
              std::string::npos);
  }
  EXPECT_NE(report.find("| **8** |"), std::string::npos);  // the training length is marked
  // Memory splits the 57 valid tokens into 16 streams: at L = 16 its segments hold at most 9
  // tokens, and the report says so; 4 and 8 are scored as labelled.
  EXPECT_NE(report.find("- Note: length 16: only 57 tokens"), std::string::npos) << report;
  EXPECT_EQ(report.find("- Note: length 4"), std::string::npos) << report;
  EXPECT_EQ(report.find("- Note: length 8"), std::string::npos) << report;
  // Re-running reuses everything: no training, the same numbers.
  const auto again = study(f, out);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(again.output.find("step "), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("alibi-seed2: done (reused)"), std::string::npos);
  EXPECT_EQ(numbers(out), j);
}

TEST(StudyCli, InterruptedStudiesContinueToTheSameNumbers) {
  const auto f = make_study("study_interrupted");
  const auto whole = study(f, f.root + "/whole");
  ASSERT_EQ(whole.code, 0) << whole.output;
  const json expected = numbers(f.root + "/whole");

  // SIGINT during the first cell's step 7, then the same command.
  const std::string a = f.root + "/sigint";
  const auto stopped = study(f, a, {}, {"TXL_INJECT_STOP_AT_STEP=7"});
  ASSERT_EQ(stopped.code, 130) << stopped.output;
  EXPECT_NE(stopped.output.find("Run the same command again"), std::string::npos);
  const auto resumed = study(f, a);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("relative-seed1: resuming at step 7 of 20"), std::string::npos)
      << resumed.output;
  EXPECT_EQ(numbers(a), expected);

  // SIGKILL before step 13 of the first cell (last checkpoint: step 10), then the same command.
  const std::string b = f.root + "/sigkill";
  const auto killed = study(f, b, {}, {"TXL_INJECT_KILL_AT_STEP=13"});
  ASSERT_EQ(killed.code, 128 + SIGKILL) << killed.output;
  const auto continued = study(f, b);
  ASSERT_EQ(continued.code, 0) << continued.output;
  EXPECT_NE(continued.output.find("relative-seed1: resuming at step 10 of 20"), std::string::npos)
      << continued.output;
  EXPECT_EQ(numbers(b), expected);

  // One cell at a time (as a scheduler would run them), then --report.
  const std::string c = f.root + "/cells";
  const auto list = study(f, c, {"--list"});
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_TRUE(cli_fs::is_regular_file(c + "/study.json")) << "--list records the study";
  EXPECT_FALSE(cli_fs::exists(c + "/runs")) << "--list runs nothing";
  int commands = 0;
  for (const char* cell : {"relative-seed1", "relative-seed2", "alibi-seed1", "alibi-seed2"}) {
    EXPECT_NE(list.output.find(std::string("--cell ") + cell + "  # queued"), std::string::npos)
        << list.output;
    const auto one = study(f, c, {"--cell", cell});
    ASSERT_EQ(one.code, 0) << one.output;
    EXPECT_FALSE(cli_fs::exists(c + "/results.json")) << "--cell writes no report";
    ++commands;
  }
  EXPECT_EQ(commands, 4);
  const auto report = study(f, c, {"--report"});
  ASSERT_EQ(report.code, 0) << report.output;
  EXPECT_EQ(numbers(c), expected);

  // Two cells at a time in child processes.
  const std::string d = f.root + "/jobs";
  const auto jobs = study(f, d, {"--jobs", "2", "--threads", "1"});
  ASSERT_EQ(jobs.code, 0) << jobs.output;
  EXPECT_TRUE(cli_fs::is_regular_file(d + "/logs/alibi-seed2.log"));
  EXPECT_EQ(numbers(d), expected);
}

// Ctrl-C reaches a --jobs study: it passes one SIGINT to each running cell, every cell stops
// after its current step with a checkpoint, and the same command continues to the numbers of
// an uninterrupted study.
TEST(StudyCli, SigintStopsJobsCleanlyAndTheStudyContinues) {
  const auto f = make_study("study_jobs_sigint", 400);
  ASSERT_EQ(study(f, f.root + "/whole").code, 0);
  const std::string out = f.root + "/out";
  const std::string log = f.root + "/study.log";
  const pid_t pid = spawn_txl(
      {"study", "--config", f.config, "--out", out, "--jobs", "2", "--threads", "1"}, log);
  // Wait until both first cells are training, then interrupt the study only.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (count_lines_with(out + "/logs/relative-seed1.log", "step ") < 2 ||
          count_lines_with(out + "/logs/relative-seed2.log", "step ") < 2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_txl(pid), 130) << read_text(log);
  for (const char* cell : {"relative-seed1", "relative-seed2"}) {
    const std::string cell_log = read_text(out + "/logs/" + cell + ".log");
    EXPECT_NE(cell_log.find(std::string("[study] interrupted in ") + cell), std::string::npos)
        << cell_log;
  }
  EXPECT_NE(read_text(log).find("run the same command again"), std::string::npos);
  const auto continued = study(f, out, {"--jobs", "2", "--threads", "1"});
  ASSERT_EQ(continued.code, 0) << continued.output;
  EXPECT_EQ(numbers(out), numbers(f.root + "/whole"));
}

TEST(StudyCli, PartialReportsAndGrowingGrids) {
  const auto f = make_study("study_grow", 10);
  const std::string out = f.root + "/out";
  ASSERT_EQ(study(f, out, {"--cell", "alibi-seed1"}).code, 0);
  const auto partial = study(f, out, {"--report"});
  ASSERT_EQ(partial.code, 0) << partial.output;
  EXPECT_NE(partial.output.find("3 of 4 cells are not finished"), std::string::npos);
  EXPECT_EQ(numbers(out)["missing_cells"].size(), 3u);
  // A seed added to the grid adds cells; the finished one is kept.
  json grown = json::parse(read_text(f.config));
  grown["grid"]["train.seed"].push_back(3);
  write_config(f.config, grown);
  const auto list = study(f, out, {"--list"});
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_NE(list.output.find("--cell alibi-seed1  # done"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("--cell alibi-seed3  # queued"), std::string::npos) << list.output;
  // Any other change is refused, naming it, and nothing is touched.
  const std::string manifest = read_text(out + "/study.json");
  json changed = grown;
  changed["eval"]["lengths"] = {4, 8};
  write_config(f.config, changed);
  const auto refused = study(f, out);
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("eval.lengths: [4,8,16] vs [4,8]"), std::string::npos)
      << refused.output;
  EXPECT_EQ(read_text(out + "/study.json"), manifest);
}

TEST(StudyCli, BadInputExitsTwoAndWritesNothing) {
  const auto f = make_study("study_bad");
  json bad = json::parse(read_text(f.config));
  bad["grid"]["model.pos_encoding"] = {"relative", "relative"};
  const std::string bad_config = write_config(f.root + "/bad.json", bad);
  const std::string out = f.root + "/out";
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"study", "--config", bad_config, "--out", out}, "lists \"relative\" twice"},
      {{"study", "--config", f.root + "/missing.json", "--out", out}, "missing.json"},
      {{"study", "--config", f.config, "--out", out, "--cell", "rope-seed1"},
       "--cell rope-seed1 is not a cell"},
      {{"study", "--config", f.config, "--out", out, "--baseline", "t5"}, "--baseline t5"},
      {{"study", "--config", f.config, "--out", out, "--jobs", "0"}, "--jobs 0"},
      {{"study", "--config", f.config, "--out", out, "--threads", "-1"}, "--threads"},
      {{"study", "--config", f.config, "--out", out, "--report"}, "no cell of"},
      {{"study", "--config", f.config, "--out", f.root + "/corpus"}, "holds no study"},
      {{"study", "--config", f.config, "--out", out, "--cell", "alibi-seed1", "--cell",
        "alibi-seed1"},
       "--cell alibi-seed1 is given twice"},
  };
  for (const auto& c : cases) {
    const auto r = run_txl(c.args);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.expected << " in " << r.output;
  }
  EXPECT_FALSE(cli_fs::exists(out)) << "a refused study writes nothing";
}

// A path whose existing part is a file can hold no folder: refused naming the option and
// the file, for the study folder and the run directory alike.
TEST(StudyCli, FoldersThatCannotBeMadeAreRefusedNamingThePath) {
  const auto f = make_study("study_out_file");
  write_text(f.root + "/file", "not a folder\n");
  const std::string out = f.root + "/file/sub";
  auto r = study(f, out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("--out " + out + ": " + f.root + "/file is not a folder"), std::string::npos)
      << r.err;
  const std::string base = f.root + "/base.json";
  write_config(base, json::parse(read_text(f.config))["base"]);
  r = run_txl({"train", "--config", base, "--run-dir", out});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("--run-dir " + out + ": " + f.root + "/file is not a folder"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_text(f.root + "/file"), "not a folder\n");
}

// Every cell is checked as `txl train` checks a run before the first one trains: a grid
// value that cannot work is refused naming the study file, the cell and the key, and
// nothing is trained or written.
TEST(StudyCli, EveryCellIsCheckedBeforeTheFirstTrains) {
  const auto f = make_study("study_precheck");
  const std::string out = f.root + "/out";
  json spec = json::parse(read_text(f.config));
  spec["grid"]["data.dir"] = {f.root + "/corpus", f.root + "/missing"};
  write_config(f.config, spec);
  auto r = study(f, out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find(f.config + ": cell relative-dir"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("data.dir: " + f.root + "/missing does not exist"), std::string::npos)
      << r.err;
  EXPECT_FALSE(cli_fs::exists(out)) << "a refused study writes nothing";
  // The memory estimate: a cell whose model cannot fit, and the share of each of --jobs.
  spec["grid"].erase("data.dir");
  spec["grid"]["model.d_inner"] = {32, 1000000};
  write_config(f.config, spec);
  r = study(f, out, {}, {"TXL_MEMORY_LIMIT_MB=400"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find(f.config + ": cell relative-d_inner1000000-seed1"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("model.d_inner"), std::string::npos) << r.err;
  EXPECT_FALSE(cli_fs::exists(out));
  // Issue 44: the probes, as each cell will run them, before the first cell trains.
  spec["grid"].erase("model.d_inner");
  spec["eval"]["probes"] = {{"copy", {{"distances", {30000}}}}};
  write_config(f.config, spec);
  r = study(f, out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find(f.config + ": cell relative-seed1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("eval.probes: copy probe: span 16 and distance 30000 need 30032 tokens"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Nothing was trained or written"), std::string::npos) << r.err;
  EXPECT_FALSE(cli_fs::exists(out));
}

// A value whose cells never trained (here: refused because its segment cannot fit the
// corpus) may be dropped from a recorded study; one whose cells have results may not.
TEST(StudyCli, AValueWhoseCellsNeverTrainedMayBeDropped) {
  const auto f = make_study("study_drop", 4);
  const std::string out = f.root + "/out";
  json spec = json::parse(read_text(f.config));
  spec["grid"] = {
      {"model.pos_encoding", {"relative"}}, {"train.seed", {1}}, {"train.tgt_len", {8, 100000}}};
  write_config(f.config, spec);
  // A scheduler's task trains one cell, recording the study with both values.
  auto r = study(f, out, {"--cell", "relative-tgt_len8-seed1"});
  ASSERT_EQ(r.code, 0) << r.output;
  r = study(f, out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("cell relative-tgt_len100000-seed1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("train.tgt_len"), std::string::npos) << r.err;
  EXPECT_FALSE(cli_fs::exists(out + "/runs/relative-tgt_len100000-seed1"));
  // Without the value that never trained: the study goes on, the trained cell reused.
  spec["grid"]["train.tgt_len"] = {8};
  write_config(f.config, spec);
  r = study(f, out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.err.find("relative-tgt_len8-seed1: done (reused)"), std::string::npos) << r.err;
  // Dropping the value whose cell has results is still refused.
  spec["grid"]["train.tgt_len"] = {12};
  write_config(f.config, spec);
  const std::string manifest = read_text(out + "/study.json");
  r = study(f, out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("no longer lists 8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("relative-tgt_len8-seed1 did"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(out + "/study.json"), manifest);
}

// --jobs x --threads far above the cores: each cell's threads are capped at its share, with
// a warning, and a SIGTERM stops the study within seconds.
TEST(StudyCli, ThreadsFarAboveTheCoresAreCappedAndSigtermStopsPromptly) {
  const auto f = make_study("study_oversubscribed", 100000);
  const std::string out = f.root + "/out";
  const std::string log = f.root + "/study.log";
  const pid_t pid = spawn_txl(
      {"study", "--config", f.config, "--out", out, "--jobs", "2", "--threads", "1024"}, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         count_lines_with(out + "/logs/relative-seed1.log", "step ") < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_txl(pid, 60.0), 128 + SIGTERM) << read_text(log);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  const std::string output = read_text(log);
  if (std::thread::hardware_concurrency() < 1024) {
    EXPECT_NE(output.find("warning: --jobs 2 --threads 1024: 1024 threads x 2 processes"),
              std::string::npos)
        << output;
    EXPECT_EQ(output.find("1024 threads, log"), std::string::npos) << output;
  }
}

}  // namespace
}  // namespace txl::testing

namespace txl::testing {
namespace {

// eval.probes: every probe runs in every cell; results.json and the report hold each group's
// mean over seeds (RECL computed over the study's groups at each seed), with plots; a bad
// probe option is refused naming its key path, before anything is written.
TEST(StudyCli, ProbesRunInEveryCellAndAreGatheredOverSeeds) {
  auto f = make_study("study_probes", 4);
  json spec = json::parse(read_text(f.config));
  spec["eval"] = {{"methods", {"nonoverlap"}},
                  {"lengths", {4, 8, 16}},
                  {"probes",
                   {{"attention", {{"windows", 2}}},
                    {"copy", {{"span", 2}, {"distances", {2, 4}}, {"count", 5}}},
                    {"passkey", {{"lengths", {16}}, {"trials", 2}, {"key_len", 1}, {"cue_len", 2}}},
                    {"recl", {{"first", 2}, {"step", 2}, {"last", 8}, {"targets", 10}}},
                    {"seed", 3}}}};
  write_config(f.config, spec);
  const std::string out = f.root + "/out";
  const auto r = study(f, out);
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(read_text(out + "/results.json"));
  const json& sections = j["probes"]["probes"];
  ASSERT_EQ(sections.size(), 4u);
  // The registry's order, whatever the config's.
  EXPECT_EQ(sections[0]["probe"], "recl");
  EXPECT_EQ(sections[3]["probe"], "attention");
  EXPECT_EQ(sections[1]["options"]["seed"], 3);
  bool recl_seen = false;
  for (const auto& row : sections[0]["rows"]) {
    if (row["series"] != "RECL (tokens)") continue;
    recl_seen = true;
    for (const char* group : {"relative", "alibi"}) {
      EXPECT_EQ(row["groups"][group]["seeds"], 2) << group;
      const double recl = row["groups"][group]["mean"];
      EXPECT_GE(recl, 2.0);
      EXPECT_LE(recl, 8.0);
    }
  }
  EXPECT_TRUE(recl_seen);
  const std::string report = read_text(out + "/report.md");
  EXPECT_NE(report.find("## Does the model use the context? Probes"), std::string::npos);
  EXPECT_NE(report.find("| copy gain (nats/token) | d = 4 |"), std::string::npos) << report;
  if (has_gnuplot()) {
    EXPECT_TRUE(cli_fs::is_regular_file(out + "/plots/probe-passkey-key-accuracy-relative.png"));
    EXPECT_TRUE(cli_fs::is_regular_file(out + "/plots/probe-copy-copy-gain-nats-token.png"));
  }

  spec["eval"]["probes"]["copy"]["count"] = 0;
  const std::string bad = write_config(f.root + "/bad.json", spec);
  const auto refused = run_txl({"study", "--config", bad, "--out", f.root + "/bad-out"});
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("eval.probes.copy.count"), std::string::npos) << refused.output;
  EXPECT_FALSE(cli_fs::exists(f.root + "/bad-out"));
}

}  // namespace
}  // namespace txl::testing
