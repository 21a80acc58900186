#include "txl/train/footprint_estimate.h"

#include <spdlog/fmt/fmt.h>

#include <string>

#include "txl/config/encodings.h"
#include "txl/model/model_size.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

constexpr double kFp32Bytes = 4.0;
constexpr double kBf16Bytes = 2.0;

}  // namespace

double TrainingFootprint::total_bytes() const {
  return weight_bytes + gradient_bytes + optimizer_bytes + activation_bytes + process_bytes +
         slack_bytes;
}

TrainingFootprint estimate_training_footprint(const Config& config, int64_t vocab_size,
                                              int64_t segment_len) {
  const ModelConfig& m = config.model;
  const TrainConfig& t = config.train;
  TrainingFootprint e;
  e.parameters = parameter_count(m, vocab_size);
  // Weights, gradients and AdamW's exp_avg and exp_avg_sq stay fp32 under bf16 autocast too.
  e.weight_bytes = e.parameters * kFp32Bytes;
  e.gradient_bytes = e.parameters * kFp32Bytes;
  e.optimizer_bytes = 2 * e.parameters * kFp32Bytes;

  // Activations: only tensors backward certainly keeps, so the estimate stays below the real
  // peak (temporaries, allocator slack and the validation pass come on top) and refuses only
  // what cannot fit. Per layer: the attention probabilities [B, H, Q, K], queries [B, H, Q, D],
  // keys and values [B, H, K, D], the feed-forward's inner activation [B, Q, F] and three
  // [B, Q, C] tensors (block input, attention output, feed-forward input); then the
  // memory carried to the next segment [B, M, C] per layer and the fp32 logits [B, Q, V]
  // (adaptive softmax: output_logit_floats).
  const double B = static_cast<double>(t.batch_size), Q = static_cast<double>(segment_len);
  const double M =
      encoding_traits(m.pos_encoding).takes_memory ? static_cast<double>(t.mem_len) : 0.0;
  const double K = Q + M;
  const double C = static_cast<double>(m.d_model), H = static_cast<double>(m.n_head),
               D = static_cast<double>(m.d_head), F = static_cast<double>(m.d_inner);
  const double per_layer = B * (H * Q * K + H * (Q + 2 * K) * D + Q * F + 3 * Q * C + M * C);
  const double element_bytes = t.precision == Precision::kBf16 ? kBf16Bytes : kFp32Bytes;
  const double logit_bytes = output_logit_floats(m, vocab_size, B * Q) * kFp32Bytes;
  e.activation_bytes = static_cast<double>(m.n_layer) * per_layer * element_bytes + logit_bytes;
  e.vocabulary_bytes = 4 * input_output_parameters(m, vocab_size) * kFp32Bytes + logit_bytes;
  e.vocab_size = vocab_size;
  e.adaptive = m.adaptive.has_value();
  return e;
}

bool training_footprint_fits(const TrainingFootprint& e, double limit_bytes, int64_t processes) {
  return limit_bytes <= 0 || static_cast<double>(processes) * e.total_bytes() <= limit_bytes;
}

std::string measured_steps(int64_t streams) {
  if (streams <= kMeasuredStreams) return fmt::format("one training step of {} streams", streams);
  return fmt::format("training steps of {} and {} streams, extrapolated to {}",
                     kMeasuredStreams / 2, kMeasuredStreams, streams);
}

std::string describe_footprint_parts(const TrainingFootprint& e) {
  std::string parts = fmt::format(
      "{:.3g} parameters: {} of weights, {} of gradients, {} of AdamW state, {} of activations",
      e.parameters, format_bytes(e.weight_bytes), format_bytes(e.gradient_bytes),
      format_bytes(e.optimizer_bytes), format_bytes(e.activation_bytes));
  parts += e.measured ? " (" + measured_steps(e.measured_streams) + ")"
                      : " (what backward certainly keeps)";
  if (e.process_bytes > 0) {
    parts +=
        fmt::format(", {} held by the process before the model", format_bytes(e.process_bytes));
  }
  if (e.slack_bytes > 0) parts += fmt::format(", {} of heap slack", format_bytes(e.slack_bytes));
  return parts;
}

void check_training_footprint(const TrainingFootprint& e, double limit_bytes, int64_t processes) {
  if (training_footprint_fits(e, limit_bytes, processes)) return;
  // The output layer over a large vocabulary is what adaptive softmax makes small.
  const bool vocabulary_dominates = !e.adaptive && e.vocabulary_bytes > 0.5 * e.total_bytes();
  const char* const about = e.measured ? "about" : "at least";
  const std::string need =
      processes == 1
          ? fmt::format("this configuration needs {} {} to train", about,
                        format_bytes(e.total_bytes()))
          : fmt::format("{} processes training at once need {} {}, {} each", processes, about,
                        format_bytes(static_cast<double>(processes) * e.total_bytes()),
                        format_bytes(e.total_bytes()));
  throw InputError(fmt::format(
      "{} ({}; {} of it grows with the vocabulary of {} tokens), but only {} of memory is "
      "available{}; {}make the model smaller (model.n_layer, model.d_model, model.d_inner) or "
      "reduce train.batch_size, train.tgt_len or train.mem_len",
      need, describe_footprint_parts(e), format_bytes(e.vocabulary_bytes), e.vocab_size,
      format_bytes(limit_bytes),
      processes == 1 ? "" : fmt::format(" to the {} together", processes),
      processes == 1 ? (vocabulary_dominates
                            ? "use adaptive softmax (model.adaptive: README, Adaptive input and "
                              "softmax), a smaller vocabulary (data.max_vocab), or "
                            : "")
                     : "run fewer processes at once, or "));
}

}  // namespace txl
