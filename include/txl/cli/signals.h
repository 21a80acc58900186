// SIGINT/SIGTERM handling shared by the commands that run long work (train, study): the first
// signal asks the work to stop at the next safe point (after the current step, with a
// checkpoint); a second one exits at once (128 + signal). Checkpoints are written
// atomically, so an immediate exit loses at most the steps since the last checkpoint.
#pragma once

#include <atomic>

namespace txl {

// 0 while no signal arrived; otherwise the signal number that asked the work to stop.
const std::atomic<int>& stop_signal();

// Installs the handlers (and clears stop_signal) for its lifetime. With second_exits =
// false a repeated signal is only another stop request: for a study's --jobs child, which
// can get the same stop twice (its study passes SIGINT on, a scheduler signals every process).
class SignalScope {
 public:
  explicit SignalScope(bool second_exits = true);
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
};

}  // namespace txl
