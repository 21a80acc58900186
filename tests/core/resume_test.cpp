// Exact resume through the real CLI: a run interrupted at step k and resumed logs, at every
// step, bit-for-bit the training loss of the uninterrupted run (fp32, one thread, relative
// encoding with memory, dropout > 0 so the random stream matters, 40 steps that wrap around
// the training streams so the data position and the memory reset at the wrap matter too).
// Also: a real SIGINT mid-training exits 130 with a loadable checkpoint, and resume continues
// to the end; a second SIGINT exits at once without damaging the last checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cli_harness.h"
#include "txl/run/checkpoint.h"

namespace txl {
namespace {

using testing::fresh_dir;
using testing::read_losses;
using testing::run_txl;
using testing::tiny_config;
using testing::write_config;
using testing::write_tiny_corpus;

// Every step 1..n present, and equal bit for bit. EXPECT_EQ on doubles is exact.
void expect_same_losses(const std::map<int64_t, double>& expected,
                        const std::map<int64_t, double>& actual, int64_t n) {
  ASSERT_EQ(expected.size(), static_cast<size_t>(n));
  ASSERT_EQ(actual.size(), static_cast<size_t>(n));
  for (int64_t step = 1; step <= n; ++step) {
    ASSERT_TRUE(actual.count(step)) << "step " << step << " missing";
    EXPECT_EQ(actual.at(step), expected.at(step)) << "step " << step;
  }
}

struct Fixture {
  std::string root;
  std::string config_path;
};

Fixture make_fixture(const std::string& name,
                     const nlohmann::json& changes = nlohmann::json::object()) {
  Fixture f;
  f.root = fresh_dir(name);
  auto config = tiny_config(write_tiny_corpus(f.root + "/corpus"));
  config.merge_patch(changes);
  f.config_path = write_config(f.root + "/config.json", config);
  return f;
}

std::map<int64_t, double> uninterrupted(const Fixture& f, int64_t max_steps) {
  const std::string run = f.root + "/reference";
  const auto r = run_txl({"train", "--config", f.config_path, "--run-dir", run, "--set",
                          "train.max_steps=" + std::to_string(max_steps)});
  EXPECT_EQ(r.code, 0) << r.output;
  return read_losses(run);
}

TEST(ExactResume, StopAtStepKThenResumeGivesTheSameLossesBitForBit) {
  // Cosine schedule with warm-up: the interrupted run keeps max_steps, so the schedule agrees.
  const Fixture f = make_fixture("stop_resume");
  constexpr int64_t kSteps = 40;
  const auto expected = uninterrupted(f, kSteps);
  ASSERT_EQ(expected.size(), static_cast<size_t>(kSteps));
  // Step 23: between validations (every 10 steps), memory carried across the stop, and the
  // resumed part wraps around the training streams (27 segments each).
  for (int64_t k : {23}) {
    const std::string run = f.root + "/stopped_at_" + std::to_string(k);
    const auto stopped = run_txl({"train", "--config", f.config_path, "--run-dir", run},
                                 {"TXL_INJECT_STOP_AT_STEP=" + std::to_string(k)});
    ASSERT_EQ(stopped.code, 130) << stopped.output;
    EXPECT_NE(stopped.output.find("Resume with: txl train --resume " + run), std::string::npos)
        << stopped.output;
    EXPECT_EQ(read_checkpoint_state(run + "/checkpoint.pt").step, k);
    const auto resumed = run_txl({"train", "--resume", run});
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed at step " + std::to_string(k)), std::string::npos);
    expect_same_losses(expected, read_losses(run), kSteps);
  }
}

TEST(ExactResume, MaxStepsKThenResumeWithMoreStepsGivesTheSameLosses) {
  // A run that ends at k (validating at k, which must not move the random stream) and is
  // extended with --set train.max_steps=N. The cosine schedule depends on max_steps, so the
  // schedule here is warm-up then constant (min_lr_ratio 1) and the two runs agree on it.
  const Fixture f = make_fixture("extend", {{"train", {{"min_lr_ratio", 1.0}}}});
  constexpr int64_t kSteps = 40;
  const auto expected = uninterrupted(f, kSteps);
  const std::string run = f.root + "/extended";
  const auto first = run_txl(
      {"train", "--config", f.config_path, "--run-dir", run, "--set", "train.max_steps=17"});
  ASSERT_EQ(first.code, 0) << first.output;
  const auto resumed = run_txl({"train", "--resume", run, "--set", "train.max_steps=40"});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("train.max_steps: 17 vs 40"), std::string::npos) << resumed.output;
  expect_same_losses(expected, read_losses(run), kSteps);
  // config.json now says 40, so the finished run is recognised as finished.
  const auto finished = run_txl({"train", "--resume", run});
  EXPECT_EQ(finished.code, 2);
  EXPECT_NE(finished.output.find("already finished (40 of train.max_steps = 40"), std::string::npos)
      << finished.output;
}

// Waits until `log` holds `lines` progress lines, or fails after `timeout_s`.
bool wait_for_progress(const std::string& log, int lines, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (testing::count_lines_with(log, "ms/step") >= lines) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

TEST(Interrupt, SigintMidTrainingExits130WithALoadableCheckpointAndResumeMatches) {
  // max_steps far away so the signal lands mid-training; constant schedule after warm-up so
  // the resumed run, cut to a nearer max_steps, can be compared with an uninterrupted run.
  const Fixture f =
      make_fixture("sigint", {{"train", {{"min_lr_ratio", 1.0}, {"max_steps", 1000000}}}});
  const std::string run = f.root + "/run";
  const std::string log = f.root + "/train.log";
  const pid_t pid = testing::spawn_txl({"train", "--config", f.config_path, "--run-dir", run}, log);
  ASSERT_TRUE(wait_for_progress(log, 5, 60.0)) << testing::read_text(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const int code = testing::wait_txl(pid);
  const std::string output = testing::read_text(log);
  ASSERT_EQ(code, 130) << output;
  EXPECT_NE(output.find("Resume with: txl train --resume " + run), std::string::npos) << output;

  const std::string ckpt = run + "/checkpoint.pt";
  ASSERT_NO_THROW(verify_checkpoint(ckpt));
  const int64_t stopped_at = read_checkpoint_state(ckpt).step;
  EXPECT_GE(stopped_at, 5);
  const int64_t total = stopped_at + 12;
  const auto resumed =
      run_txl({"train", "--resume", run, "--set", "train.max_steps=" + std::to_string(total)});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_EQ(read_checkpoint_state(ckpt).step, total);
  expect_same_losses(uninterrupted(f, total), read_losses(run), total);
}

TEST(Interrupt, KillNineLosesOnlyTheStepsSinceTheLastCheckpointAndResumeMatches) {
  // Checkpoints every 3 steps; kill -9 lands anywhere, possibly mid-write. The resumed run
  // drops the metrics lines logged after the checkpoint and logs those steps again, equal.
  const Fixture f = make_fixture(
      "kill9", {{"train", {{"min_lr_ratio", 1.0}, {"max_steps", 1000000}, {"eval_interval", 3}}}});
  const std::string run = f.root + "/run";
  const std::string log = f.root + "/train.log";
  const pid_t pid = testing::spawn_txl({"train", "--config", f.config_path, "--run-dir", run}, log);
  ASSERT_TRUE(wait_for_progress(log, 8, 60.0)) << testing::read_text(log);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(testing::wait_txl(pid), 128 + SIGKILL);
  ASSERT_NO_THROW(verify_checkpoint(run + "/checkpoint.pt"));
  const int64_t at = read_checkpoint_state(run + "/checkpoint.pt").step;
  const int64_t total = at + 5;
  const auto resumed =
      run_txl({"train", "--resume", run, "--set", "train.max_steps=" + std::to_string(total)});
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  expect_same_losses(uninterrupted(f, total), read_losses(run), total);
}

TEST(Interrupt, SecondSigintExitsAtOnceAndKeepsTheLastCheckpointIntact) {
  const Fixture f =
      make_fixture("double_sigint", {{"train", {{"max_steps", 1000000}, {"eval_interval", 3}}}});
  const std::string run = f.root + "/run";
  const std::string log = f.root + "/train.log";
  const pid_t pid = testing::spawn_txl({"train", "--config", f.config_path, "--run-dir", run}, log);
  ASSERT_TRUE(wait_for_progress(log, 7, 60.0)) << testing::read_text(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(testing::wait_txl(pid), 130) << testing::read_text(log);
  // Whether the first signal's checkpoint was written or cut off, checkpoint.pt is whole.
  ASSERT_NO_THROW(verify_checkpoint(run + "/checkpoint.pt"));
  const int64_t at = read_checkpoint_state(run + "/checkpoint.pt").step;
  const auto resumed =
      run_txl({"train", "--resume", run, "--set", "train.max_steps=" + std::to_string(at + 3)});
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  // Temporaries a cut-off write may leave are gone after the resume.
  for (const auto& entry : std::filesystem::directory_iterator(run)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST(Interrupt, ASecondTrainerOnTheSameRunDirectoryIsRefused) {
  const Fixture f =
      make_fixture("lock", {{"train", {{"max_steps", 1000000}, {"eval_interval", 2}}}});
  const std::string run = f.root + "/run";
  const std::string log = f.root + "/train.log";
  const pid_t pid = testing::spawn_txl({"train", "--config", f.config_path, "--run-dir", run}, log);
  ASSERT_TRUE(wait_for_progress(log, 3, 60.0)) << testing::read_text(log);
  const auto second = run_txl({"train", "--resume", run});
  const auto forced = run_txl({"train", "--config", f.config_path, "--run-dir", run, "--force"});
  ::kill(pid, SIGTERM);
  EXPECT_EQ(testing::wait_txl(pid), 143) << testing::read_text(log);
  EXPECT_EQ(second.code, 2) << second.output;
  EXPECT_NE(second.output.find("in use by another txl train"), std::string::npos) << second.output;
  EXPECT_EQ(forced.code, 2) << forced.output;
  EXPECT_NE(forced.output.find("in use by another txl train"), std::string::npos) << forced.output;
  ASSERT_NO_THROW(verify_checkpoint(run + "/checkpoint.pt"));
}

}  // namespace
}  // namespace txl
