#include "txl/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace txl {

double learning_rate(const TrainConfig& t, int64_t step) {
  if (t.warmup_steps > 0 && step <= t.warmup_steps) {
    return t.lr * static_cast<double>(step) / static_cast<double>(t.warmup_steps);
  }
  const double span = std::max<double>(1.0, static_cast<double>(t.max_steps - t.warmup_steps));
  const double progress = std::clamp((step - t.warmup_steps) / span, 0.0, 1.0);
  const double floor = t.lr * t.min_lr_ratio;
  return floor + (t.lr - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace txl
