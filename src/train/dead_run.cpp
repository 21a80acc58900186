#include "txl/train/dead_run.h"

#include <spdlog/fmt/fmt.h>

#include <exception>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/run/run_dir.h"
#include "txl/train/batcher.h"
#include "txl/train/footprint_estimate.h"
#include "txl/util/fs.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// The dead run's memory estimate in bytes (0 when its config or vocabulary cannot be read).
double dead_run_estimate(const RunPaths& paths) {
  if (!is_regular_file(paths.vocab())) return 0.0;  // never a FIFO's read that blocks
  try {
    const Config config = config_from_json(read_json_file(paths.config()), paths.config());
    const int64_t vocab = static_cast<int64_t>(Vocab::load(paths.vocab()).size());
    return estimate_training_footprint(config, vocab, longest_segment(config.train)).total_bytes();
  } catch (const std::exception&) {
    return 0.0;
  }
}

}  // namespace

std::string dead_run_diagnosis(const std::string& dir, double available_bytes) {
  const RunPaths paths{dir};
  if (!is_regular_file(paths.config()) || is_regular_file(paths.last_checkpoint())) return "";
  std::string why =
      "holds a run that stopped before its first checkpoint (config.json without "
      "checkpoint.pt: it was killed, since a run that fails inside txl removes "
      "what it wrote)";
  const double estimate = dead_run_estimate(paths);
  if (estimate > 0 && available_bytes > 0 && estimate > kCloseToMemoryShare * available_bytes) {
    why += fmt::format(
        "; its memory estimate, {}, is close to the {} available here, so the "
        "kernel's out-of-memory killer most likely stopped it (`dmesg` names it); make the model, "
        "train.batch_size or the segment smaller (`txl train --dry-run` shows the estimate by "
        "part), or use adaptive softmax for a large vocabulary",
        format_bytes(estimate), format_bytes(available_bytes));
  }
  return why + "; use --force to start again there, or another --run-dir";
}

}  // namespace txl
