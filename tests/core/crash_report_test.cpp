// install_crash_report: a process that dies of a fatal signal first writes what it died of and
// a backtrace to stderr, then dies of that same signal (its parent sees no difference).
#include "txl/platform/crash_report.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace txl {
namespace {

struct Death {
  int signal = 0;  // the signal the child died of; 0 if it exited
  std::string stderr_text;
};

// Forks a child that sends itself `sig` with the handlers installed, and collects its stderr.
Death die_of(int sig) {
  install_crash_report();  // as main() does (here already, through tests/core/main.cpp)
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::raise(sig);
    ::_exit(0);  // not reached when the handler passes the signal on
  }
  ::close(pipe_fds[1]);
  Death death;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) death.stderr_text.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  if (WIFSIGNALED(status)) death.signal = WTERMSIG(status);
  return death;
}

TEST(CrashReport, AFatalSignalWritesABacktraceThenKillsAsBefore) {
  for (const int sig : {SIGSEGV, SIGABRT, SIGBUS}) {
    const Death death = die_of(sig);
    EXPECT_EQ(death.signal, sig) << "the process still dies of the signal";
    const std::string name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGABRT ? "SIGABRT" : "SIGBUS";
    EXPECT_NE(death.stderr_text.find("txl: crashed with " + name + " (signal " +
                                     std::to_string(sig) + ", process "),
              std::string::npos)
        << death.stderr_text;
    // A frame of this executable (its offset) and one of the C library (raise).
    EXPECT_NE(death.stderr_text.find("txl_core_tests("), std::string::npos) << death.stderr_text;
    EXPECT_NE(death.stderr_text.find("libc.so"), std::string::npos) << death.stderr_text;
  }
}

}  // namespace
}  // namespace txl
