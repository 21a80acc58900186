// Whether the bench's models fit in memory together, checked before any is built (bench.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/platform/device.h"
#include "txl/platform/resources.h"
#include "txl/train/bench.h"
#include "txl/train/footprint_estimate.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

void check_bench_memory(const std::vector<Config>& configs, int64_t vocab_size,
                        const std::string& what) {
  if (configs.empty()) return;
  // Host memory only: a GPU's own memory is its runtime's to report.
  if (!resolve_device(configs.front().train.device, "train.device").is_cpu()) return;
  // The models' weights, gradients and AdamW state are all held at once; one step's
  // activations at a time; and the process itself: one footprint, judged as training's is.
  TrainingFootprint all;
  for (const auto& c : configs) {
    const auto e = estimate_training_footprint(c, vocab_size, c.train.tgt_len);
    all.weight_bytes += e.weight_bytes;
    all.gradient_bytes += e.gradient_bytes;
    all.optimizer_bytes += e.optimizer_bytes;
    all.activation_bytes = std::max(all.activation_bytes, e.activation_bytes);
  }
  all.process_bytes = current_rss_mb() * 1024.0 * 1024.0;
  const double limit = process_ram_limit_bytes();
  if (training_footprint_fits(all, limit)) return;
  const double held = all.weight_bytes + all.gradient_bytes + all.optimizer_bytes;
  const bool several = configs.size() > 1;
  throw InputError(fmt::format(
      "{}: {} needs at least {} ({} of weights, gradients and AdamW state, {} of one step's "
      "activations, {} held by the process) but only {} of memory is available; {}use a "
      "smaller model or train.batch_size",
      what,
      several ? fmt::format("the bench holds {} models at once and", configs.size())
              : std::string("the bench's model"),
      format_bytes(all.total_bytes()), format_bytes(held), format_bytes(all.activation_bytes),
      format_bytes(all.process_bytes), format_bytes(limit),
      several ? "time fewer encodings at a time (--encodings relative,absolute), or " : ""));
}

}  // namespace txl
