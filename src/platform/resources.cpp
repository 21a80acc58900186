#include "txl/platform/resources.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "txl/util/env.h"

namespace txl {

double peak_rss_mb() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0.0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

double process_cpu_seconds() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0.0;
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double current_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long long total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return 0.0;
  return static_cast<double>(resident_pages) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

double process_ram_limit_bytes() {
  const double held = current_rss_mb() * 1024.0 * 1024.0;
  double free_bytes = 0.0;  // what the machine can still give: MemAvailable
  std::ifstream meminfo("/proc/meminfo");
  std::string name, unit;
  double kib = 0.0;
  while (meminfo >> name >> kib) {
    std::getline(meminfo, unit);
    if (name == "MemAvailable:") {
      free_bytes = kib * 1024.0;
      break;
    }
  }
  // A container's limit is invisible in /proc/meminfo, which shows the host; exceeding it
  // gets the process killed rather than an allocation error. "max" means no limit.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string limit;
  if (cgroup >> limit && limit != "max") {
    try {
      // What the group may still allocate: its limit less what it holds (this process too).
      double used = 0.0;
      std::ifstream current("/sys/fs/cgroup/memory.current");
      if (!(current >> used)) used = 0.0;
      const double bytes = std::max(std::stod(limit) - used, 1.0);
      if (free_bytes == 0.0 || bytes < free_bytes) free_bytes = bytes;
    } catch (const std::exception&) {
      // Unreadable: fall back to MemAvailable.
    }
  }
  double whole = free_bytes > 0.0 ? held + free_bytes : 0.0;
  // A user's own cap on the whole process, as a container's size is (and how the tests make a
  // refusal happen on any machine): what the process holds already counts against it.
  if (const auto mb = env_number("TXL_MEMORY_LIMIT_MB")) {
    const double bytes = *mb * 1024.0 * 1024.0;
    if (whole == 0.0 || bytes < whole) whole = bytes;
  }
  return whole;
}

double available_ram_bytes() {
  const double whole = process_ram_limit_bytes();
  if (whole <= 0.0) return 0.0;
  return std::max(whole - current_rss_mb() * 1024.0 * 1024.0, 1.0);
}

}  // namespace txl
