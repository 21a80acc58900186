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
  double held = 0.0, activations = 0.0;
  for (const auto& c : configs) {
    const auto e = estimate_training_footprint(c, vocab_size, c.train.tgt_len);
    held += e.weight_bytes + e.gradient_bytes + e.optimizer_bytes;
    activations = std::max(activations, e.activation_bytes);
  }
  const double available = available_ram_bytes();
  if (available <= 0 || held + activations <= available) return;
  const bool several = configs.size() > 1;
  throw InputError(fmt::format(
      "{}: {} needs at least {} ({} of weights, gradients and AdamW state, {} of one step's "
      "activations) but only {} of memory is available; {}use a "
      "smaller model or train.batch_size",
      what,
      several ? fmt::format("the bench holds {} models at once and", configs.size())
              : std::string("the bench's model"),
      format_bytes(held + activations), format_bytes(held), format_bytes(activations),
      format_bytes(available),
      several ? "time fewer encodings at a time (--encodings relative,absolute), or " : ""));
}

}  // namespace txl
