// The bench's progress lines on stderr (issue 54, cause 13): at the paper's shape a step or an
// evaluation takes minutes, and such a bench printed nothing for 10 minutes. Nothing until the
// interval (BenchOptions::progress_seconds) has passed since the start or the last line, then
// a line for what runs now, the training steps of a phase or an evaluation, with tokens, rate
// and time left.
#pragma once

#include <cstdint>
#include <string>

#include "txl/eval/evaluate.h"
#include "txl/util/clock.h"

namespace txl {

class BenchProgress {
 public:
  explicit BenchProgress(double interval_seconds) : interval_(interval_seconds) {}

  // `total` steps (or other `unit`s) of `tokens_per_step` tokens each, named `phase`, begin
  // now.
  void start_steps(std::string phase, int64_t total, int64_t tokens_per_step,
                   std::string unit = "step");
  // `done` steps of the phase are done (a fraction: inside a step).
  void steps_done(double done);
  // A callback for an evaluation named `label` that scores `tokens` tokens.
  EvalProgressFn evaluation(const std::string& label, int64_t tokens);

 private:
  bool due() const;
  void print(const std::string& line);

  double interval_;
  Clock::time_point last_ = Clock::now();
  std::string phase_, unit_;
  int64_t total_ = 0, tokens_per_step_ = 0;
  Clock::time_point phase_start_ = Clock::now();
};

}  // namespace txl
