#include "txl/platform/process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace txl {

std::string self_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot resolve /proc/self/exe: " + error.message());
  return path.string();
}

int run_process(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::runtime_error("run_process: empty command");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Flush so buffered output is not written twice (once by the child's copy of the buffer).
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::execv(args[0], args.data());
    std::_Exit(127);  // exec failed; only async-signal-safe calls are allowed here
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw std::runtime_error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> environment_with(const std::vector<std::string>& assignments) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(
        assignments.begin(), assignments.end(),
        [&](const std::string& a) { return entry.rfind(a.substr(0, a.find('=') + 1), 0) == 0; });
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), assignments.begin(), assignments.end());
  return env;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one_minute = 0.0;
  in >> one_minute;
  return one_minute;
}

}  // namespace txl
