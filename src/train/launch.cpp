#include "txl/train/launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <spdlog/fmt/fmt.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "txl/platform/process.h"

namespace txl {

namespace {

using Clock = std::chrono::steady_clock;

// This process's environment with the rank's variables set (replacing inherited ones).
std::vector<std::string> rank_environment(int rank, int nproc, int port) {
  return environment_with({"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(nproc),
                           "LOCAL_RANK=" + std::to_string(rank),
                           "LOCAL_WORLD_SIZE=" + std::to_string(nproc), "MASTER_ADDR=127.0.0.1",
                           "MASTER_PORT=" + std::to_string(port)});
}

pid_t spawn_rank(const std::string& exe, const std::vector<std::string>& args,
                 const std::vector<std::string>& env) {
  std::vector<char*> argv = {const_cast<char*>(exe.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  // SIGINT and SIGTERM blocked across fork: one that reached the child before its execve
  // would run the launcher's handler there and be lost, and the rank would train on.
  sigset_t stops, previous;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stops, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);  // a pending stop ends the rank here
    ::setpgid(0, 0);                     // a terminal's Ctrl-C reaches the launcher only
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // and the ranks do not outlive it
    if (::getppid() != parent) ::_exit(1);
    ::execve(exe.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0)
    throw std::runtime_error(std::string("cannot start a rank: ") + std::strerror(fork_error));
  return pid;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return fmt::format("exited with code {}", exit_code_of(status));
}

}  // namespace

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port on 127.0.0.1");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

int launch_local_ranks(int nproc, const std::vector<std::string>& args,
                       const std::atomic<int>& stop_signal) {
  const std::string exe = self_executable();
  const int port = free_local_port();
  fmt::print(stderr, "launching {} processes (ranks 0-{}) on 127.0.0.1:{}\n", nproc, nproc - 1,
             port);
  std::vector<pid_t> pids;
  // A stop that arrives while the ranks start ends the starting: those already running are
  // stopped below, and none waits for ranks that will never come.
  for (int r = 0; r < nproc && stop_signal.load() == 0; ++r)
    pids.push_back(spawn_rank(exe, args, rank_environment(r, nproc, port)));

  int alive = static_cast<int>(pids.size());
  int failure_code = 0;  // the first failing rank's code
  int stop_code = 0;     // 128 + signal of ranks that stopped cleanly
  bool forwarded = false;
  Clock::time_point deadline{};
  const auto signal_alive = [&](int sig) {
    for (const pid_t pid : pids) {
      if (pid > 0) ::kill(pid, sig);
    }
  };
  while (alive > 0) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] != done) continue;
        pids[r] = -1;
        --alive;
        const int code = exit_code_of(status);
        // A rank that stopped on SIGINT / SIGTERM checkpointed with the others (they agree
        // on the step); anything else non-zero is a failure.
        const bool stopped = code == 128 + SIGINT || code == 128 + SIGTERM;
        if (stopped) stop_code = code;
        if (code != 0 && !stopped && failure_code == 0) {
          failure_code = code;
          fmt::print(stderr, "rank {} {}; stopping the other ranks\n", r, describe(status));
          signal_alive(SIGTERM);
          deadline = Clock::now() + std::chrono::seconds(kTerminateGraceSeconds);
        }
      }
      continue;
    }
    if (!forwarded && stop_signal.load() != 0) {
      forwarded = true;
      signal_alive(stop_signal.load());
    }
    if (failure_code != 0 && Clock::now() > deadline) signal_alive(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (failure_code != 0) return failure_code;
  return stop_code;
}

}  // namespace txl
