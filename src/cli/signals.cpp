#include "txl/cli/signals.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>

namespace txl {

namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_second_exits{true};

void on_signal(int sig) {
  if (g_stop_signal.exchange(sig) == 0) {
    // write(2) is async-signal-safe; stdio and fmt are not.
    static const char kNotice[] =
        "\ntxl: stopping after the current step and saving a checkpoint "
        "(signal again to quit at once)\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kNotice, sizeof kNotice - 1);
  } else if (g_second_exits.load()) {
    // Second signal: leave at once. A half-written temporary is removed by the next resume.
    std::_Exit(128 + sig);
  }
}

}  // namespace

const std::atomic<int>& stop_signal() { return g_stop_signal; }

SignalScope::SignalScope(bool second_exits) {
  g_stop_signal.store(0);
  g_second_exits.store(second_exits);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

SignalScope::~SignalScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace txl
