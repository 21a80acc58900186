#include "txl/cli/signals.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>

namespace txl {

namespace {

std::atomic<int> g_stop_signal{0};

void on_signal(int sig) {
  if (g_stop_signal.exchange(sig) == 0) {
    // write(2) is async-signal-safe; stdio and fmt are not.
    static const char kNotice[] =
        "\ntxl: stopping after the current step and saving a checkpoint "
        "(signal again to quit at once)\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kNotice, sizeof kNotice - 1);
  } else {
    // Second signal: leave at once. A half-written temporary is removed by the next resume.
    std::_Exit(128 + sig);
  }
}

}  // namespace

const std::atomic<int>& stop_signal() { return g_stop_signal; }

SignalScope::SignalScope() {
  g_stop_signal.store(0);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

SignalScope::~SignalScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace txl
