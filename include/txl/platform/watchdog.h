// A deadline for calls that may block inside a library that offers none, or whose own
// limit does not cover every wait: c10d's TCPStore client waits on a socket that a peer
// which accepts and never answers keeps open. When a guarded call is still running at its
// deadline, the process prints one line ("error: " + the message) and exits at once with
// kExitRuntimeFailure: nothing it could unwind to would return from that call anyway.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace txl {

class Watchdog {
 public:
  Watchdog();  // starts the watching thread, which sleeps while nothing is armed
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Until disarm(): after `limit`, print `message` and exit. Arming again replaces the
  // deadline and the message.
  void arm(std::chrono::milliseconds limit, std::string message);
  void disarm();

 private:
  void watch();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::string message_;
  bool stopping_ = false;
  std::thread thread_;
};

// Arms `watchdog` for its lifetime.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog& watchdog, std::chrono::milliseconds limit, std::string message)
      : watchdog_(watchdog) {
    watchdog_.arm(limit, std::move(message));
  }
  ~WatchdogScope() { watchdog_.disarm(); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog& watchdog_;
};

}  // namespace txl
