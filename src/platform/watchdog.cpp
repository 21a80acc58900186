#include "txl/platform/watchdog.h"

#include <unistd.h>

#include <cstdlib>

#include "txl/util/error.h"

namespace txl {

Watchdog::Watchdog() : thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Watchdog::arm(std::chrono::milliseconds limit, std::string message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deadline_ = std::chrono::steady_clock::now() + limit;
    message_ = "error: " + std::move(message) + "\n";
  }
  changed_.notify_all();
}

void Watchdog::disarm() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deadline_.reset();
  }
  changed_.notify_all();
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!deadline_) {
      changed_.wait(lock);
      continue;
    }
    if (changed_.wait_until(lock, *deadline_) == std::cv_status::timeout && deadline_ &&
        std::chrono::steady_clock::now() >= *deadline_) {
      // write(2), not stdio: the blocked thread may hold anything else.
      [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, message_.data(), message_.size());
      std::_Exit(kExitRuntimeFailure);
    }
  }
}

}  // namespace txl
