// Progress lines for long evaluations (a window of 65536 tokens takes minutes): nothing for
// an evaluation that ends within the first interval, then one line per interval on stderr:
//
//   "  length 65536: 42% of 1 window, 01:40 elapsed, about 02:18 left"
//   "  length 512: 60% of 586 windows (350 done), 00:20 elapsed, about 00:13 left"
#pragma once

#include <string>

#include "txl/eval/evaluate.h"
#include "txl/util/clock.h"

namespace txl {

// One line for `label` ("length 65536", "rope-seed1 nonoverlap L=4096").
std::string format_eval_progress(const std::string& label, const EvalProgress& progress,
                                 double elapsed_seconds);

class EvalProgressPrinter {
 public:
  explicit EvalProgressPrinter(std::string label, double interval_seconds = 10.0);
  void operator()(const EvalProgress& progress);
  // A callback for evaluate() that reports to this printer (which must outlive it).
  EvalProgressFn callback();

 private:
  std::string label_;
  double interval_;
  Clock::time_point start_;
  double next_;
};

}  // namespace txl
