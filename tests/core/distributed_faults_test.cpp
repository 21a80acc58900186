// Faults around data-parallel training that must end, with one line, instead of hanging or
// starting what cannot work: a rank whose MASTER_PORT is held by a listener that never
// answers gives up after TXL_DIST_TIMEOUT_S (the watchdog behind every wait); --nproc checks
// everything a launch can check before any rank starts; a SIGTERM of the launcher stops
// every rank within seconds and prints a resume command that works; bad launch variables
// and --nproc values are refused naming them.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cli_harness.h"
#include "txl/platform/runtime.h"
#include "txl/platform/watchdog.h"
#include "txl/run/checkpoint.h"
#include "txl/train/distributed.h"

namespace txl::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A TCP listener on 127.0.0.1 that never says a word: with `accept_connections` it takes
// every connection and holds it open; without, connections wait in its backlog.
class SilentListener {
 public:
  explicit SilentListener(bool accept_connections) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    if (accept_connections) thread_ = std::thread([this] { accept_and_hold(); });
  }
  ~SilentListener() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const int fd : held_) ::close(fd);
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  void accept_and_hold() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) held_.push_back(::accept(fd_, nullptr, nullptr));
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> held_;
  std::thread thread_;
};

// A training split long enough for a stream per process even at --nproc 1024.
std::string tiny_run_config(const std::string& root, int batch_size = 4, int steps = 30) {
  const std::string corpus =
      write_corpus(root + "/corpus", tiny_english(2000), tiny_english(40, 1), tiny_english(20, 2));
  json c = tiny_config(corpus);
  c["train"]["batch_size"] = batch_size;
  c["train"]["max_steps"] = steps;
  return write_config(root + "/config.json", c);
}

TEST(DistributedFaults, ARankWhosePeerNeverAnswersGivesUpAfterTheTimeout) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("silent");
  const std::string config = tiny_run_config(root);
  for (const bool accepts : {false, true}) {
    SilentListener listener(accepts);
    const std::string log = root + "/rank1.log";
    const auto start = Clock::now();
    const pid_t pid =
        spawn_txl({"train", "--config", config, "--run-dir", root + "/run"}, log,
                  {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                   "MASTER_PORT=" + std::to_string(listener.port()), "TXL_DIST_TIMEOUT_S=2"});
    const int code = wait_txl(pid, 60.0);
    const double seconds = seconds_since(start);
    const std::string output = read_text(log);
    EXPECT_EQ(code, 1) << (accepts ? "accepting" : "backlog") << ": " << output;
    EXPECT_LT(seconds, 20.0) << output;  // 2 s and the watchdog's 1 s grace, and start-up
    EXPECT_NE(output.find("TXL_DIST_TIMEOUT_S"), std::string::npos) << output;
    EXPECT_NE(output.find("rank 1 of 2 could not join"), std::string::npos) << output;
    EXPECT_EQ(output.find("frame #"), std::string::npos) << "a LibTorch backtrace: " << output;
    EXPECT_FALSE(cli_fs::exists(root + "/run"));
  }
  cleanup_scratch();
}

// The watchdog itself: a call still running at its deadline ends the process with one line;
// a disarmed one lets the process go on.
TEST(DistributedFaults, TheWatchdogEndsACallThatOutlivesItsDeadline) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog watchdog;
        const WatchdogScope guard(watchdog, std::chrono::milliseconds(200), "the call hung");
        std::this_thread::sleep_for(std::chrono::seconds(20));
      },
      ::testing::ExitedWithCode(1), "error: the call hung");
  Watchdog watchdog;
  { const WatchdogScope guard(watchdog, std::chrono::milliseconds(100), "must not fire"); }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  SUCCEED();  // still running
}

TEST(DistributedFaults, LaunchChecksComeBeforeAnyRankStarts) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("launch_checks");
  const std::string config = tiny_run_config(root);
  const std::string run = root + "/run";
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    std::string expected;
  };
  const int too_many =
      static_cast<int>(std::min<int64_t>(kMaxThreadsPerCore * logical_cores() + 1, 1024));
  const std::vector<Case> cases = {
      {{"--nproc", "1000"},
       {},
       "train.batch_size (4) must be a multiple of the number of "
       "processes (1000)"},
      {{"--nproc", "0"}, {}, "--nproc 0 is not valid; expected 1 to 1024"},
      {{"--nproc", "-1"}, {}, "--nproc -1 is not valid; expected 1 to 1024"},
      {{"--nproc", "2"},
       {"RANK=0", "WORLD_SIZE=2"},
       "--nproc 2 starts its own processes, but RANK=0"},
      {{"--nproc", "1"}, {"WORLD_SIZE=1"}, "WORLD_SIZE=1 in the environment"},
      {{"--nproc", std::to_string(too_many), "--set",
        "train.batch_size=" + std::to_string(too_many)},
       {},
       "--nproc " + std::to_string(too_many) + " is more than 2 processes per core"},
      // Each process holds LibTorch and the whole model: two need more than one.
      {{"--nproc", "2"},
       {"TXL_MEMORY_LIMIT_MB=300"},
       "--nproc 2: 2 processes training at once need about"},
      {{"--oversubscribe"}, {}, "--nproc"},
      {{}, {"RANK=1"}, "RANK=1 without WORLD_SIZE"},
      {{}, {"RANK=0"}, "RANK=0 without WORLD_SIZE"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"train", "--config", config, "--run-dir", run};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto start = Clock::now();
    const auto r = run_txl(args, c.env);
    EXPECT_EQ(r.code, 2) << c.expected << ": " << r.output;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.expected << " in " << r.err;
    EXPECT_EQ(r.err.find("launching"), std::string::npos) << "a rank started: " << r.err;
    EXPECT_LT(seconds_since(start), 30.0) << c.expected;
    EXPECT_FALSE(cli_fs::exists(run)) << c.expected;
  }
  // The one process the memory allows trains.
  const auto one =
      run_txl({"train", "--config", config, "--run-dir", run, "--set", "train.max_steps=2"},
              {"TXL_MEMORY_LIMIT_MB=300"});
  EXPECT_EQ(one.code, 0) << one.output;
  cleanup_scratch();
}

// True while some process has `mark` in its environment (the launcher's ranks inherit it).
bool process_with_mark_alive(const std::string& mark) {
  for (const auto& entry : cli_fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string environ = read_text(entry.path().string() + "/environ");
    if (environ.find(mark) != std::string::npos) return true;
  }
  return false;
}

bool wait_for_text(const std::string& path, const std::string& text, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (read_text(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// SIGTERM of `txl train --nproc 2` while the ranks start, and while they train: the
// launcher and every rank are gone within seconds; a stop during training checkpoints, and
// the printed resume command (with --nproc 2) continues the run.
TEST(DistributedFaults, SigtermOfTheLauncherStopsEveryRankPromptly) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const std::string root = scratch_dir("launcher_sigterm");
  const std::string config = tiny_run_config(root, 4, 100000);
  for (const char* when : {"launching", "\nstep "}) {  // starting; a progress line logged
    const bool training = std::string(when) != "launching";
    const std::string run = root + (training ? "/run-training" : "/run-starting");
    const std::string log = run + ".log";
    const std::string mark =
        "TXL_TEST_MARK=" + std::to_string(::getpid()) + (training ? "-training" : "-starting");
    const pid_t pid =
        spawn_txl({"train", "--config", config, "--run-dir", run, "--nproc", "2"}, log, {mark});
    ASSERT_TRUE(wait_for_text(log, when, 120.0)) << read_text(log);
    const auto start = Clock::now();
    ::kill(pid, SIGTERM);
    EXPECT_EQ(wait_txl(pid, 60.0), 128 + SIGTERM) << read_text(log);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (process_with_mark_alive(mark) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(process_with_mark_alive(mark)) << "a rank outlived its launcher";
    EXPECT_LT(seconds_since(start), 20.0) << read_text(log);
    if (!training) continue;
    const std::string output = read_text(log);
    const std::string hint = "Resume with: txl train --resume " + run + " --nproc 2";
    EXPECT_NE(output.find(hint), std::string::npos) << output;
    const int64_t step = read_checkpoint_state(run + "/checkpoint.pt").step;
    const auto resumed = run_txl({"train", "--resume", run, "--nproc", "2", "--set",
                                  "train.max_steps=" + std::to_string(step + 2)});
    EXPECT_EQ(resumed.code, 0) << resumed.output;
  }
  cleanup_scratch();
}

TEST(DistributedFaults, ThreadsFarAboveTheCoresAreCappedWithAWarning) {
  if (!txl::gloo_built()) GTEST_SKIP() << txl::gloo_missing_reason();
  const int64_t cores = logical_cores();
  const ThreadShare fits = share_cores(1, 1);
  EXPECT_EQ(fits.threads, 1);
  EXPECT_TRUE(fits.warning.empty());
  EXPECT_EQ(share_cores(0, 1).threads, cores);
  EXPECT_EQ(share_cores(0, 2).threads, std::max<int64_t>(1, cores / 2));
  const ThreadShare many = share_cores(kMaxThreadsPerCore * cores + 1, 1);
  EXPECT_EQ(many.threads, cores);
  EXPECT_NE(many.warning.find("using " + std::to_string(cores) + " thread(s) each instead"),
            std::string::npos)
      << many.warning;
  const ThreadShare jobs = share_cores(1024, 2);
  if (2 * 1024 > kMaxThreadsPerCore * cores) {
    EXPECT_EQ(jobs.threads, std::max<int64_t>(1, cores / 2));
    EXPECT_NE(jobs.warning.find("1024 threads x 2 processes"), std::string::npos) << jobs.warning;
  }
  const ThreadShare crowd = share_cores(1, kMaxThreadsPerCore * cores + 1);
  EXPECT_EQ(crowd.threads, 1);
  EXPECT_NE(crowd.warning.find("processes on"), std::string::npos) << crowd.warning;
}

}  // namespace
}  // namespace txl::testing
