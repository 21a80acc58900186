#include "txl/train/bench_progress.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdio>

#include "txl/eval/progress.h"
#include "txl/util/text.h"

namespace txl {

void BenchProgress::start_steps(std::string phase, int64_t total, int64_t tokens_per_step,
                                std::string unit) {
  phase_ = std::move(phase);
  unit_ = std::move(unit);
  total_ = total;
  tokens_per_step_ = tokens_per_step;
  phase_start_ = Clock::now();
}

void BenchProgress::steps_done(double done) {
  if (!due() || done <= 0) return;
  const double elapsed = seconds_since(phase_start_);
  const double tokens = done * static_cast<double>(tokens_per_step_);
  print(fmt::format(
      "  bench: {}, {} {:.1f} of {}, {:.0f} tokens, {:.0f} tok/s, {} elapsed, about {} left",
      phase_, unit_, done, total_, tokens, tokens / std::max(elapsed, 1e-9),
      format_duration(elapsed),
      format_duration(elapsed / done * (static_cast<double>(total_) - done))));
}

EvalProgressFn BenchProgress::evaluation(const std::string& label, int64_t tokens) {
  const auto start = Clock::now();
  return [this, label = "bench: " + label, tokens, start](const EvalProgress& p) {
    if (due()) print(format_eval_progress(label, p, seconds_since(start), tokens));
  };
}

bool BenchProgress::due() const { return seconds_since(last_) >= interval_; }

void BenchProgress::print(const std::string& line) {
  fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
  last_ = Clock::now();
}

}  // namespace txl
