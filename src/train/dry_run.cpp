#include "txl/train/dry_run.h"

#include <spdlog/fmt/fmt.h>

#include "txl/config/adaptive.h"
#include "txl/config/encodings.h"
#include "txl/train/batcher.h"
#include "txl/train/step_footprint.h"

namespace txl {

DryRun dry_run(const Config& config, int64_t vocab_size, double limit_bytes,
               const std::vector<int32_t>* train_tokens) {
  validate_adaptive_vocab(config.model.adaptive, vocab_size);  // cutoffs below the vocabulary
  DryRun r;
  r.vocab_size = vocab_size;
  r.segment_len = longest_segment(config.train);
  r.estimate =
      measure_training_footprint(config, vocab_size, r.segment_len, train_tokens, limit_bytes);
  const bool memory = encoding_traits(config.model.pos_encoding).takes_memory;
  r.flops = model_flops(config.model, vocab_size, config.train.batch_size, r.segment_len,
                        memory ? config.train.mem_len : 0);
  r.limit_bytes = limit_bytes;
  return r;
}

std::string format_dry_run(const DryRun& r, const Config& c) {
  constexpr double kGB = 1e9;
  const TrainingFootprint& e = r.estimate;
  std::string out = fmt::format(
      "model: {} layers, d_model {}, {} heads x {}, d_inner {}, {} encoding, vocabulary {}\n"
      "parameters: {:.0f}\n"
      "FLOPs per token: {:.4g} training, {:.4g} evaluation (batch {} x segment {}, memory {})\n",
      c.model.n_layer, c.model.d_model, c.model.n_head, c.model.d_head, c.model.d_inner,
      to_string(c.model.pos_encoding), r.vocab_size, e.parameters, r.flops.train_per_token,
      r.flops.eval_per_token, c.train.batch_size, r.segment_len, c.train.mem_len);
  out += fmt::format(
      "memory estimate (training, one process): {:.2f} GB = weights {:.2f} + gradients {:.2f} + "
      "AdamW state {:.2f} + activations {:.2f} GB{}\n",
      e.total_bytes() / kGB, e.weight_bytes / kGB, e.gradient_bytes / kGB, e.optimizer_bytes / kGB,
      e.activation_bytes / kGB,
      e.measured ? fmt::format(" + process {:.2f} + heap slack {:.2f} GB", e.process_bytes / kGB,
                               e.slack_bytes / kGB)
                 : std::string());
  out += e.measured ? fmt::format("  (activations measured: {}; peak resident memory expected)\n",
                                  measured_steps(e.measured_streams))
                    : "  (activations from the formula: what backward certainly keeps, a lower "
                      "bound; nothing was measured here)\n";
  if (r.read_peak_bytes > 0) {
    out += fmt::format("reading the corpus: {:.2f} GB at its peak, the process included ({})\n",
                       r.read_peak_bytes / kGB, r.read_peak);
  }
  if (r.limit_bytes <= 0) return out + "available here: unknown\n";
  out += fmt::format("available here: {:.2f} GB for the whole process: {}\n", r.limit_bytes / kGB,
                     r.fits() ? "fits" : "does NOT fit (txl train would refuse it)");
  return out;
}

}  // namespace txl
