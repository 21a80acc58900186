#include "txl/platform/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace txl {

namespace {

constexpr int kMaxFrames = 64;
constexpr size_t kAltStackBytes = 1 << 16;
alignas(16) char g_alt_stack[kAltStackBytes];

// Only async-signal-safe calls from here on: write(2), backtrace_symbols_fd (no malloc), and
// backtrace, loaded before any crash by install_crash_report.
void write_text(const char* text) {
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

void write_number(int value) {
  char digits[16];
  int at = sizeof digits;
  digits[--at] = '\0';
  unsigned v = value < 0 ? 0u - static_cast<unsigned>(value) : static_cast<unsigned>(value);
  do {
    digits[--at] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && at > 1);
  if (value < 0) digits[--at] = '-';
  write_text(digits + at);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "a fatal signal";
  }
}

void on_fatal_signal(int sig) {
  write_text("\ntxl: crashed with ");
  write_text(signal_name(sig));
  write_text(" (signal ");
  write_number(sig);
  write_text(", process ");
  write_number(static_cast<int>(::getpid()));
  write_text("); backtrace, innermost first:\n");
  void* frames[kMaxFrames];
  const int n = ::backtrace(frames, kMaxFrames);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  write_text("txl: please report this with the command that ran and the output of `txl info`\n");
  // SA_RESETHAND restored the default action: die of the same signal, as without this.
  ::raise(sig);
}

}  // namespace

void install_crash_report() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc_s now: its first call may allocate
  stack_t alt{};
  alt.ss_sp = g_alt_stack;
  alt.ss_size = kAltStackBytes;
  ::sigaltstack(&alt, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace txl
