// Per-operator CPU time from LibTorch's autograd profiler (the legacy one, present in 1.13's
// C++ API), aggregated by operator name. Used by `txl bench --profile`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txl {

struct OpTime {
  std::string name;  // e.g. aten::addmm, or an autograd node such as MmBackward0
  int64_t calls = 0;
  double self_ms = 0.0;   // time inside the op minus the ops it called
  double total_ms = 0.0;  // time inside the op including the ops it called
};

// Records every operator run by this thread (and the autograd engine working for it) from
// construction until stop(). Only one may be active at a time.
class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Ends recording; one row per operator name, largest self time first.
  std::vector<OpTime> stop();

  // After stop(): one row per (operator, caller) pair named "op <- caller", where the
  // caller is the innermost enclosing operator or autograd node ("(top)" when none); shows
  // which layer of the model issues, e.g., the copies.
  const std::vector<OpTime>& by_caller() const { return by_caller_; }

 private:
  bool running_ = false;
  std::vector<OpTime> by_caller_;
};

// Fixed-width table of the `top` rows with the largest self time; percentages are of
// `wall_ms` (the wall-clock time of what was profiled).
std::string format_op_table(const std::vector<OpTime>& ops, double wall_ms, size_t top);

}  // namespace txl
