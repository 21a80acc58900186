// Process resource measurements used by `txl bench` (resident memory now and at its peak)
// and by `txl train` (the memory the machine can give before it starts).
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

// Bytes this process can expect to allocate: /proc/meminfo MemAvailable, or the cgroup v2
// limit (/sys/fs/cgroup/memory.max) or TXL_MEMORY_LIMIT_MB when lower; 0 when none can be
// read. InputError for a TXL_MEMORY_LIMIT_MB that is not a positive number.
double available_ram_bytes();

}  // namespace txl
