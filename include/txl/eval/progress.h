// Progress lines for long evaluations (a window of 65536 tokens takes minutes): nothing for
// an evaluation that ends within the first interval, then one line per interval on stderr:
//
//   "  length 65536: 42% of 1 window, 01:40 elapsed, about 02:18 left"
//   "  length 512: 60% of 586 windows (350 done), 00:20 elapsed, about 00:13 left"
//
// Where the caller knows how many tokens the evaluation scores (training's validation, the
// bench), the line also says the tokens so far and the rate:
//
//   "  valid @ step 2: 50% of 508 windows (254 done), 130,037 of 260,074 tokens, 677 tok/s,
//    03:12 elapsed, about 03:12 left"
#pragma once

#include <cstdint>
#include <string>

#include "txl/eval/evaluate.h"
#include "txl/util/clock.h"

namespace txl {

// One line for `label` ("length 65536", "rope-seed1 nonoverlap L=4096"); with `tokens` > 0
// (the tokens the whole evaluation scores) also the tokens so far and their rate.
std::string format_eval_progress(const std::string& label, const EvalProgress& progress,
                                 double elapsed_seconds, int64_t tokens = 0);

class EvalProgressPrinter {
 public:
  explicit EvalProgressPrinter(std::string label, double interval_seconds = 10.0,
                               int64_t tokens = 0);
  void operator()(const EvalProgress& progress);
  // A callback for evaluate() that reports to this printer (which must outlive it).
  EvalProgressFn callback();

 private:
  std::string label_;
  double interval_;
  int64_t tokens_;  // the tokens the evaluation scores; 0: not said
  Clock::time_point start_;
  double next_;
};

}  // namespace txl
