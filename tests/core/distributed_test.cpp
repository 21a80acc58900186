// Data-parallel training on c10d (Gloo over loopback): 2 ranks x 1 thread give the losses of
// one process with the same global batch (memory carried); a 2-rank run stopped and resumed
// logs the uninterrupted run's losses bit for bit, and a resume with another world size is
// refused; kill -9 of one rank stops the other within seconds and leaves the last checkpoint
// intact; bad launch settings exit 2 and write nothing.
#include "txl/train/distributed.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>

#include "cli_harness.h"
#include "txl/run/checkpoint.h"
#include "txl/util/error.h"

namespace txl::testing {
namespace {

using nlohmann::json;

// tiny_config with memory, 4 streams (2 per rank) and no dropout: dropout masks are drawn
// per rank, so only a dropout-free run can equal one process's.
std::string ddp_config(const std::string& root, int steps = 30) {
  const std::string corpus = write_tiny_corpus(root + "/corpus");
  json c = tiny_config(corpus);
  c["model"]["dropout"] = 0.0;
  c["model"]["dropatt"] = 0.0;
  c["train"]["batch_size"] = 4;
  c["train"]["max_steps"] = steps;
  c["train"]["eval_interval"] = 10;
  return write_config(root + "/config.json", c);
}

CliResult train(const std::string& config, const std::string& run, std::vector<std::string> extra,
                const std::vector<std::string>& env = {}) {
  std::vector<std::string> args = {"train", "--config", config, "--run-dir", run};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_txl(args, env);
}

TEST(Distributed, TwoRanksGiveTheLossesOfOneProcessWithTheSameGlobalBatch) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("ddp_equal");
  const std::string config = ddp_config(root);
  auto r = train(config, root + "/one", {});
  ASSERT_EQ(r.code, 0) << r.output;
  r = train(config, root + "/two", {"--nproc", "2"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.err.find("launching 2 processes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("x 2 processes"), std::string::npos) << r.err;
  const auto one = read_losses(root + "/one");
  const auto two = read_losses(root + "/two");
  ASSERT_EQ(one.size(), 30u);
  ASSERT_EQ(two.size(), one.size());
  for (const auto& [step, loss] : one) EXPECT_NEAR(two.at(step), loss, 1e-5) << "step " << step;
  // Rank 0 alone wrote the run: the lines of one process (progress and validation), not twice.
  const auto one_lines = read_metrics(root + "/one");
  const auto two_lines = read_metrics(root + "/two");
  ASSERT_EQ(two_lines.size(), one_lines.size());
  // Validation is sharded over the ranks and summed: the one-process numbers.
  int validations = 0;
  for (size_t i = 0; i < one_lines.size(); ++i) {
    if (!one_lines[i].contains("valid_ppl")) continue;
    ++validations;
    EXPECT_EQ(two_lines[i]["valid_tokens"], one_lines[i]["valid_tokens"]);
    EXPECT_NEAR(two_lines[i]["valid_ppl"].get<double>(), one_lines[i]["valid_ppl"].get<double>(),
                1e-5 * one_lines[i]["valid_ppl"].get<double>());
  }
  EXPECT_EQ(validations, 3);
  cleanup_scratch();
}

TEST(Distributed, AStoppedTwoRankRunResumesBitForBitOnlyWithTwoRanks) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("ddp_resume");
  const std::string config = ddp_config(root);
  auto r = train(config, root + "/whole", {"--nproc", "2"});
  ASSERT_EQ(r.code, 0) << r.output;
  r = train(config, root + "/parts", {"--nproc", "2"}, {"TXL_INJECT_STOP_AT_STEP=13"});
  ASSERT_EQ(r.code, 130) << r.output;
  EXPECT_EQ(read_checkpoint_state(root + "/parts/checkpoint.pt").step, 13);
  EXPECT_EQ(read_checkpoint_state(root + "/parts/checkpoint.pt").world_size, 2);

  r = run_txl({"train", "--resume", root + "/parts"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("trained by 2 process(es) and this resume has 1"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--nproc 2"), std::string::npos) << r.err;

  r = run_txl({"train", "--resume", root + "/parts", "--nproc", "2"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto whole = read_losses(root + "/whole");
  const auto parts = read_losses(root + "/parts");
  ASSERT_EQ(parts.size(), whole.size());
  for (const auto& [step, loss] : whole) EXPECT_EQ(parts.at(step), loss) << "step " << step;
  cleanup_scratch();
}

TEST(Distributed, KillingOneRankStopsTheOtherWithinSecondsAndKeepsTheCheckpoint) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("ddp_kill");
  const std::string config = ddp_config(root, 400);
  const auto start = std::chrono::steady_clock::now();
  const auto r = train(config, root + "/run", {"--nproc", "2"},
                       {"TXL_INJECT_KILL_AT_STEP=15", "TXL_INJECT_KILL_RANK=1"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.code, 128 + 9) << r.output;
  EXPECT_NE(r.err.find("rank 1 was killed by signal 9; stopping the other ranks"),
            std::string::npos)
      << r.err;
  EXPECT_LT(seconds, 60.0);
  // The checkpoint of step 10 is whole; rank 0 never wrote a later one.
  EXPECT_NO_THROW(verify_checkpoint(root + "/run/checkpoint.pt"));
  EXPECT_EQ(read_checkpoint_state(root + "/run/checkpoint.pt").step, 10);
  cleanup_scratch();
}

TEST(Distributed, BadLaunchSettingsExitTwoAndWriteNothing) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("ddp_bad");
  const std::string config = ddp_config(root);
  auto r = train(config, root + "/three", {"--nproc", "3"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("train.batch_size (4) must be a multiple of the number of processes (3)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(cli_fs::exists(root + "/three"));
  r = train(config, root + "/norank", {}, {"WORLD_SIZE=2"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("WORLD_SIZE=2 without RANK"), std::string::npos) << r.err;
  r = train(config, root + "/badrank", {}, {"WORLD_SIZE=2", "RANK=2"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.err.find("RANK=\"2\" is not valid; expected an integer from 0 to 1"),
            std::string::npos)
      << r.err;
  r = train(config, root + "/negative", {"--nproc", "-1"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_FALSE(cli_fs::exists(root + "/norank"));
  EXPECT_FALSE(cli_fs::exists(root + "/badrank"));
  cleanup_scratch();
}

// The environment convention, in-process.
TEST(Distributed, EnvironmentFollowsTorchrunAndNamesABadVariable) {
  struct Env {
    const char* name;
    const char* value;
  };
  const auto with = [](std::vector<Env> vars) {
    for (const char* n :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TXL_DIST_TIMEOUT_S"})
      ::unsetenv(n);
    for (const auto& v : vars) ::setenv(v.name, v.value, 1);
  };
  with({});
  EXPECT_EQ(distributed_env_from_environment().world_size, 1);
  with({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.2"}, {"MASTER_PORT", "2950"}});
  const auto env = distributed_env_from_environment();
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);  // LOCAL_RANK defaults to RANK
  EXPECT_EQ(env.master_addr, "10.0.0.2");
  EXPECT_EQ(env.master_port, 2950);
  EXPECT_EQ(env.timeout.count(), 600);
  with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}});
  EXPECT_THROW(distributed_env_from_environment(), InputError);
  with({{"RANK", "x"}, {"WORLD_SIZE", "2"}});
  EXPECT_THROW(distributed_env_from_environment(), InputError);
  with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TXL_DIST_TIMEOUT_S", "0"}});
  EXPECT_THROW(distributed_env_from_environment(), InputError);
  with({});
}

}  // namespace
}  // namespace txl::testing
