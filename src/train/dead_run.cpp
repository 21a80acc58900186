#include "txl/train/dead_run.h"

#include <spdlog/fmt/fmt.h>

#include <exception>
#include <optional>

#include "txl/config/config.h"
#include "txl/data/vocab.h"
#include "txl/run/run_dir.h"
#include "txl/train/batcher.h"
#include "txl/train/footprint_estimate.h"
#include "txl/train/step_footprint.h"
#include "txl/util/fs.h"
#include "txl/util/json.h"
#include "txl/util/text.h"

namespace txl {

namespace {

// The dead run's footprint as `txl train` measures it (one process; ids drawn as a word
// corpus' are, since its corpus is not read here), or nullopt when its config or vocabulary
// cannot be read or its step cannot even be measured.
std::optional<TrainingFootprint> dead_run_footprint(const RunPaths& paths, double limit_bytes) {
  if (!is_regular_file(paths.vocab())) return std::nullopt;  // never a FIFO's read that blocks
  try {
    const Config config = config_from_json(read_json_file(paths.config()), paths.config());
    const int64_t vocab = static_cast<int64_t>(Vocab::load(paths.vocab()).size());
    return measure_training_footprint(config, vocab, longest_segment(config.train), nullptr,
                                      limit_bytes);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string dead_run_diagnosis(const std::string& dir, double limit_bytes) {
  const RunPaths paths{dir};
  if (!is_regular_file(paths.config()) || is_regular_file(paths.last_checkpoint())) return "";
  std::string why =
      "holds a run that stopped before its first checkpoint (config.json without "
      "checkpoint.pt: it was killed, since a run that fails inside txl removes "
      "what it wrote)";
  const auto footprint = dead_run_footprint(paths, limit_bytes);
  if (footprint && limit_bytes > 0 &&
      !training_footprint_fits(*footprint, kCloseToMemoryShare * limit_bytes)) {
    why += fmt::format(
        "; its memory estimate, {} {}, is close to the {} this process may use here, so the "
        "kernel's out-of-memory killer most likely stopped it (`dmesg` names it); make the model, "
        "train.batch_size or the segment smaller (`txl train --dry-run` shows the estimate by "
        "part), or use adaptive softmax for a large vocabulary",
        footprint->measured ? "about" : "at least", format_bytes(footprint->total_bytes()),
        format_bytes(limit_bytes));
  }
  return why + "; use --force to start again there, or another --run-dir";
}

}  // namespace txl
