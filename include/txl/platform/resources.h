// Process resource measurements used by `txl bench`: resident memory now and at its peak.
#pragma once

namespace txl {

// Peak resident set size of this process so far, in MiB (getrusage ru_maxrss). A high-water
// mark: it never goes down, so compare peaks of different workloads in separate processes.
double peak_rss_mb();

// CPU time (user + system) this process has used so far, all threads, in seconds. On a
// shared machine it tracks the work done better than wall-clock time does.
double process_cpu_seconds();

// Resident set size now, in MiB (/proc/self/statm); 0 when unavailable.
double current_rss_mb();

}  // namespace txl
