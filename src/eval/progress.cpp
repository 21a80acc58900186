#include "txl/eval/progress.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <cstdio>
#include <utility>

#include "txl/util/text.h"

namespace txl {

namespace {

// A whole number with thousands separators: 260074 -> "260,074".
std::string format_count(double value) {
  std::string digits = std::to_string(static_cast<int64_t>(std::llround(value)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(size_t(i), ",");
  return digits;
}

}  // namespace

std::string format_eval_progress(const std::string& label, const EvalProgress& p, double elapsed,
                                 int64_t tokens) {
  std::string line = fmt::format("  {}: {:.0f}% of {} window{}", label, 100.0 * p.fraction,
                                 p.windows, p.windows == 1 ? "" : "s");
  if (p.windows > 1) line += fmt::format(" ({} done)", p.windows_done);
  if (tokens > 0) {
    const double done = p.fraction * static_cast<double>(tokens);
    line += fmt::format(", {} of {} tokens", format_count(done), format_count(tokens));
    if (elapsed > 0) line += fmt::format(", {} tok/s", format_count(done / elapsed));
  }
  line += ", " + format_duration(elapsed) + " elapsed";
  if (p.fraction > 0 && p.fraction < 1)
    line += ", about " + format_duration(elapsed * (1 - p.fraction) / p.fraction) + " left";
  return line;
}

EvalProgressPrinter::EvalProgressPrinter(std::string label, double interval_seconds, int64_t tokens)
    : label_(std::move(label)),
      interval_(interval_seconds),
      tokens_(tokens),
      start_(Clock::now()),
      next_(interval_seconds) {}

void EvalProgressPrinter::operator()(const EvalProgress& progress) {
  const double elapsed = seconds_since(start_);
  if (elapsed < next_) return;
  next_ = interval_ > 0 ? elapsed + interval_ : 0.0;
  fmt::print(stderr, "{}\n", format_eval_progress(label_, progress, elapsed, tokens_));
  std::fflush(stderr);
}

EvalProgressFn EvalProgressPrinter::callback() {
  return [this](const EvalProgress& p) { (*this)(p); };
}

}  // namespace txl
