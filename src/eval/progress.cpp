#include "txl/eval/progress.h"

#include <spdlog/fmt/fmt.h>

#include <cstdio>
#include <utility>

#include "txl/util/text.h"

namespace txl {

std::string format_eval_progress(const std::string& label, const EvalProgress& p, double elapsed) {
  std::string line = fmt::format("  {}: {:.0f}% of {} window{}", label, 100.0 * p.fraction,
                                 p.windows, p.windows == 1 ? "" : "s");
  if (p.windows > 1) line += fmt::format(" ({} done)", p.windows_done);
  line += ", " + format_duration(elapsed) + " elapsed";
  if (p.fraction > 0 && p.fraction < 1)
    line += ", about " + format_duration(elapsed * (1 - p.fraction) / p.fraction) + " left";
  return line;
}

EvalProgressPrinter::EvalProgressPrinter(std::string label, double interval_seconds)
    : label_(std::move(label)),
      interval_(interval_seconds),
      start_(Clock::now()),
      next_(interval_seconds) {}

void EvalProgressPrinter::operator()(const EvalProgress& progress) {
  const double elapsed = seconds_since(start_);
  if (elapsed < next_) return;
  next_ = interval_ > 0 ? elapsed + interval_ : 0.0;
  fmt::print(stderr, "{}\n", format_eval_progress(label_, progress, elapsed));
  std::fflush(stderr);
}

EvalProgressFn EvalProgressPrinter::callback() {
  return [this](const EvalProgress& p) { (*this)(p); };
}

}  // namespace txl
