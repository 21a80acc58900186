// Output paths (--json, --plot and its .svg; cli/output_path.h): a run's or a study's own
// files, a directory, FIFO, socket or device, a missing folder are refused before any work
// and again at write time, naming the option and the path and changing nothing; a link is
// written through to its target, judged by its target; a new file in a run directory is fine.
// In process against hand-made folders (the rules read names, not contents), then once
// through the executable on a trained run for every command that writes one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "../base/special_files.h"
#include "cli_harness.h"
#include "txl/cli/output_path.h"
#include "txl/run/run_dir.h"
#include "txl/util/error.h"
#include "txl/util/fs.h"

namespace txl {
namespace {

namespace fs = std::filesystem;
using testing::make_socket;
using testing::read_text;
using testing::run_txl;
using testing::write_text;

std::string refusal(const std::string& path, const std::string& option = "--json") {
  try {
    check_output_path(path, option);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Every file under `dir` with its kind and contents, to show that nothing changed.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(e.path(), dir).string();
    files[name] = e.is_symlink()        ? "link " + fs::read_symlink(e.path()).string()
                  : e.is_regular_file() ? read_text(e.path().string())
                                        : describe(file_kind(e.path().string()));
  }
  return files;
}

// A run directory holding every run file (run_file_names(): a new one is covered too) and
// an evaluation cache entry; a study folder with its own files.
struct Folders {
  std::string root, run, study;
};
Folders make_folders() {
  Folders f;
  f.root = testing::scratch_dir("output_paths");
  f.run = f.root + "/run";
  for (const auto& name : run_file_names()) write_text(f.run + "/" + name, name + " bytes");
  write_text(RunPaths{f.run}.eval_cache() + "/valid-L8.json", "{}");
  f.study = f.root + "/study";
  for (const char* name : {"study.json", "results.json", "report.md", "cells/rope-seed1.json",
                           "logs/rope-seed1.log", "plots/ppl.png"}) {
    write_text(f.study + "/" + name, name);
  }
  return f;
}

TEST(OutputPath, TheFilesOfARunDirectoryAndAStudyFolderAreRefused) {
  const Folders f = make_folders();
  std::vector<std::string> refused;
  for (const auto& name : run_file_names()) refused.push_back(f.run + "/" + name);
  refused.push_back(RunPaths{f.run}.eval_cache() + "/valid-L8.json");
  refused.push_back(RunPaths{f.run}.eval_cache() + "/new.json");
  refused.push_back(f.run + "/./eval-cache/../best.pt");  // another spelling of the same file
  for (const char* name : {"study.json", "results.json", "report.md", "cells/new.json",
                           "logs/rope-seed1.log", "plots/ppl.png"}) {
    refused.push_back(f.study + "/" + name);
  }
  refused.push_back(f.study + "/runs/x/../../report.md");
  fs::create_directories(f.study + "/runs/x");
  // A run without an evaluation cache yet: a file of that name would block the cache.
  write_text(f.root + "/young/config.json", "{}");
  refused.push_back(RunPaths{f.root + "/young"}.eval_cache());
  const auto before = snapshot(f.root);
  for (const auto& path : refused) {
    const std::string message = refusal(path);
    EXPECT_EQ(message.rfind("--json " + path + " is ", 0), 0u) << path << ": " << message;
    EXPECT_NE(message.find("txl never writes over those"), std::string::npos) << message;
    EXPECT_THROW(write_output_file(path, "--json", "{}"), InputError) << path;
  }
  EXPECT_EQ(snapshot(f.root), before);
  // New files beside them are fine, as are run-file names outside any run or study.
  for (const auto& path : {f.run + "/eval.json", f.study + "/my-notes.json", f.root + "/best.pt",
                           f.root + "/report.md"}) {
    EXPECT_EQ(refusal(path), "") << path;
  }
  write_output_file(f.run + "/eval.json", "--json", "{}");
  EXPECT_EQ(read_text(f.run + "/eval.json"), "{}");
  testing::cleanup_scratch();
}

TEST(OutputPath, DirectoriesFifosSocketsDevicesAndMissingFoldersAreRefused) {
  const std::string dir = testing::scratch_dir("output_special");
  const std::string fifo = dir + "/out.fifo", sock = dir + "/out.sock";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  make_socket(sock);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir, "--json " + dir + " is a directory"},
      {dir + "/", "is a directory"},
      {fifo, "--json " + fifo + " is a FIFO (named pipe)"},
      {sock, "--json " + sock + " is a socket"},
      {"/dev/null", "--json /dev/null is a character device"},
      {"/dev/full", "--json /dev/full is a character device"},
      {dir + "/absent/out.json", "directory " + dir + "/absent does not exist"},
  };
  for (const auto& [path, expected] : cases) {
    const std::string message = refusal(path);
    EXPECT_NE(message.find(expected), std::string::npos) << path << ": " << message;
  }
  // Issue 44: --json /dev/stdout into a pipe (a link to /proc/self/fd/pipe:[N]) failed with
  // exit 1 after all the work; a folder where no file can be created is refused at once.
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  const std::string pipe_path = "/proc/self/fd/" + std::to_string(ends[1]);
  EXPECT_NE(refusal(pipe_path).find("cannot create a file in /proc/self/fd"), std::string::npos)
      << refusal(pipe_path);
  ::close(ends[0]);
  ::close(ends[1]);
  EXPECT_EQ(file_kind(fifo), FileKind::kFifo);
  EXPECT_EQ(file_kind(sock), FileKind::kSocket);
  EXPECT_EQ(file_kind("/dev/null"), FileKind::kCharDevice);
  // Checked again at write time: a path that became a FIFO during the work is refused then,
  // and stays a FIFO.
  const std::string late = dir + "/late.json";
  EXPECT_EQ(refusal(late), "");
  ASSERT_EQ(::mkfifo(late.c_str(), 0644), 0);
  EXPECT_THROW(write_output_file(late, "--json", "{}"), InputError);
  EXPECT_EQ(file_kind(late), FileKind::kFifo);
  testing::cleanup_scratch();
}

// A symbolic link is written through (its target replaced, the link kept), and the rules
// are applied to its target: a link to a run's best.pt is refused like best.pt itself.
TEST(OutputPath, ALinkIsWrittenThroughAndJudgedByItsTarget) {
  const Folders f = make_folders();
  const std::string to_best = f.root + "/to_best.json", to_fifo = f.root + "/to_fifo.json",
                    to_file = f.root + "/to_file.json";
  fs::create_symlink(f.run + "/best.pt", to_best);
  ASSERT_EQ(::mkfifo((f.root + "/fifo").c_str(), 0644), 0);
  fs::create_symlink("fifo", to_fifo);
  write_text(f.root + "/real.json", "old");
  fs::create_symlink("real.json", to_file);
  const auto best = refusal(to_best);
  EXPECT_NE(best.find("--json " + to_best + " (a link to " + f.run + "/best.pt) is the best.pt"),
            std::string::npos)
      << best;
  EXPECT_NE(refusal(to_fifo).find("is a FIFO"), std::string::npos) << refusal(to_fifo);
  write_output_file(to_file, "--json", "new");
  EXPECT_TRUE(fs::is_symlink(to_file));
  EXPECT_EQ(read_text(f.root + "/real.json"), "new");
  EXPECT_EQ(read_text(f.run + "/best.pt"), "best.pt bytes");
  testing::cleanup_scratch();
}

// Through the executable: each command that writes a file refuses a run's own files before
// it evaluates anything (no eval-cache entry appears), with exit 2 naming the option.
TEST(OutputPathCli, EveryOutputOptionRefusesARunsFilesBeforeAnyWork) {
  const std::string dir = testing::scratch_dir("output_cli");
  const std::string corpus =
      testing::write_corpus(dir + "/corpus", testing::tiny_english(200),
                            testing::tiny_english(30, 1), testing::tiny_english(30, 2));
  const std::string run = dir + "/run";
  ASSERT_TRUE(testing::train_tiny_run(corpus, run, "relative"));
  const std::string config = run + ".config.json";
  const std::string study = dir + "/study";
  write_text(study + "/study.json", "{}");
  write_text(study + "/plots/ppl.svg", "the study's plot");
  const auto before = snapshot(run);
  const auto study_before = snapshot(study);
  struct Row {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Row> rows = {
      {{"eval", "--run", run, "--lengths", "8", "--json", run + "/config.json"},
       "--json " + run + "/config.json is the config.json of the run directory"},
      {{"eval", "--run", run, "--lengths", "8", "--json", run + "/best.pt"},
       "--json " + run + "/best.pt is the best.pt"},
      {{"compare", run, run, "--lengths", "8", "--json", run + "/vocab.json"},
       "--json " + run + "/vocab.json is the vocab.json"},
      {{"compare", run, run, "--lengths", "8", "--plot", study + "/plots/ppl.png"},
       "--plot " + study + "/plots/ppl.png is in plots/ of the study folder"},
      {{"bench", "--config", config, "--steps", "1", "--json", run + "/checkpoint.pt"},
       "--json " + run + "/checkpoint.pt is the checkpoint.pt"},
      {{"encodings", "--json", run + "/metrics.jsonl"}, "--json " + run + "/metrics.jsonl is"},
  };
  for (const auto& row : rows) {
    const auto r = run_txl(row.args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(row.expected), std::string::npos) << row.expected << "\n" << r.err;
  }
  EXPECT_EQ(snapshot(run), before);
  EXPECT_EQ(snapshot(study), study_before);
  // A new file inside the run is written; the run's files stay as they were.
  const auto ok = run_txl({"eval", "--run", run, "--lengths", "8", "--json", run + "/eval.json"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(nlohmann::json::parse(read_text(run + "/eval.json")).contains("results"));
  for (const auto& name : run_file_names()) {
    if (before.count(name)) EXPECT_EQ(read_text(run + "/" + name), before.at(name)) << name;
  }
  testing::cleanup_scratch();
}

}  // namespace
}  // namespace txl
