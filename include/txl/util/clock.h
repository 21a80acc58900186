// Wall-clock intervals for progress lines, time-left estimates and recorded timings.
#pragma once

#include <chrono>

namespace txl {

using Clock = std::chrono::steady_clock;

// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace txl
