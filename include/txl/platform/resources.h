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

// What this process may hold in all at its peak: the resident memory it holds now plus what
// the machine can still give it (/proc/meminfo MemAvailable, or the cgroup v2 limit
// /sys/fs/cgroup/memory.max less what the group holds, when lower), or TXL_MEMORY_LIMIT_MB
// when lower still. TXL_MEMORY_LIMIT_MB is a cap on the whole process, as a container's size
// is, not headroom beyond what it already holds. 0 when none can be read. InputError for a
// TXL_MEMORY_LIMIT_MB that is not a positive number.
double process_ram_limit_bytes();

// What this process can still allocate: process_ram_limit_bytes() less what it holds now (at
// least 1 byte); 0 when unknown.
double available_ram_bytes();

}  // namespace txl
