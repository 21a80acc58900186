// Learning-rate schedule: linear warm-up from 0 to lr over warmup_steps, then cosine decay
// to lr * min_lr_ratio at max_steps.
#pragma once

#include "txl/config/config.h"

namespace txl {

// step counts from 1 (the first optimizer step).
double learning_rate(const TrainConfig& train, int64_t step);

}  // namespace txl
