#include "txl/train/step_footprint.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/config/encodings.h"
#include "txl/model/memory.h"
#include "txl/model/transformer.h"
#include "txl/platform/device.h"
#include "txl/platform/resources.h"
#include "txl/platform/runtime.h"
#include "txl/train/step_checks.h"
#include "txl/util/error.h"

namespace txl {

namespace {

// [streams, Q + 1] ids: the training split's first tokens, or Zipf-drawn ids without one.
torch::Tensor sample_ids(const std::vector<int32_t>* train, int64_t streams, int64_t segment_len,
                         int64_t vocab_size) {
  const int64_t n = streams * (segment_len + 1);
  if (train != nullptr && static_cast<int64_t>(train->size()) >= n) {
    return torch::from_blob(const_cast<int32_t*>(train->data()), {streams, segment_len + 1},
                            torch::kInt)
        .to(torch::kLong);
  }
  // Rank r (0-based) with probability ~ 1 / (r + 1): r = floor(V^u) - 1 for u uniform.
  const auto u = torch::rand({streams, segment_len + 1}, torch::kDouble);
  return (torch::pow(static_cast<double>(vocab_size), u).floor() - 1)
      .clamp(0, vocab_size - 1)
      .to(torch::kLong);
}

// The tensor bytes one training step of `model` needs beyond what is live before it (its
// weights): memory rows, activations, temporaries and the gradients backward makes; of them,
// the most in blocks malloc's heap serves.
struct StepBytes {
  double total = 0;
  double small = 0;
};

StepBytes step_bytes(TransformerLM& model, const Config& config, const torch::Tensor& ids) {
  const TrainConfig& tc = config.train;
  const int64_t streams = ids.size(0), segment_len = ids.size(1) - 1;
  clear_gradients(model->parameters());
  reset_tensor_bytes_peak();
  const TensorBytes before = tensor_bytes();
  {
    Memory memory;  // full, as from the second step of a run on
    const int64_t mem_len = model->has_memory() ? tc.mem_len : 0;
    if (mem_len > 0) {
      for (int64_t l = 0; l < config.model.n_layer; ++l) {
        memory.layers.push_back(torch::zeros({streams, mem_len, config.model.d_model}));
      }
    }
    torch::Tensor loss;
    {
      AutocastGuard autocast(tc.precision, torch::Device(torch::kCPU));
      ForwardOptions fwd;
      fwd.targets = ids.narrow(1, 1, segment_len);
      fwd.keep_memory = mem_len;
      fwd.key_window = same_length_key_window(tc.same_length, tc.mem_len);
      auto result = model->forward(ids.narrow(1, 0, segment_len), memory, fwd);
      loss = result.nll.mean();
    }
    loss.backward();
  }
  const TensorBytes after = tensor_bytes();
  clear_gradients(model->parameters());
  return {static_cast<double>(after.peak_bytes - before.live_bytes),
          static_cast<double>(after.small_peak_bytes - before.small_peak_bytes)};
}

bool measurable_here(const Config& config) {
  if (!tensor_bytes().counted) return false;
  try {
    return resolve_device(config.train.device, "train.device").is_cpu();
  } catch (const std::exception&) {
    return false;  // the run itself reports the device
  }
}

// One training step at the config's streams (see kMeasuredStreams).
StepBytes measure_step(const Config& config, int64_t vocab_size, int64_t segment_len,
                       const std::vector<int32_t>* train_tokens) {
  const int64_t streams = std::max<int64_t>(1, config.train.batch_size);
  TransformerLM model(config.model, vocab_size);
  model->train();
  const auto measure = [&](int64_t b) {
    return step_bytes(model, config, sample_ids(train_tokens, b, segment_len, vocab_size));
  };
  // Up to kMeasuredStreams streams, the step itself. Past them, a straight line through
  // kMeasuredStreams / 2 and kMeasuredStreams streams: at 1 or 2 streams the peak can fall
  // where the weights' gradients, not the activations, are most of it (PTB's shape: 45 and
  // 51 MB at 1 and 2 streams, then 99, 195 and 387 MB at 4, 8 and 16).
  if (streams <= kMeasuredStreams) return measure(streams);
  const StepBytes half = measure(kMeasuredStreams / 2), full = measure(kMeasuredStreams);
  const double more = static_cast<double>(streams - kMeasuredStreams) /
                      static_cast<double>(kMeasuredStreams - kMeasuredStreams / 2);
  return {full.total + more * std::max(0.0, full.total - half.total),
          full.small + more * std::max(0.0, full.small - half.small)};
}

}  // namespace

TrainingFootprint measure_training_footprint(const Config& config, int64_t vocab_size,
                                             int64_t segment_len,
                                             const std::vector<int32_t>* train_tokens,
                                             double limit_bytes) {
  TrainingFootprint e = estimate_training_footprint(config, vocab_size, segment_len);
  e.process_bytes = current_rss_mb() * 1024.0 * 1024.0;
  if (!measurable_here(config)) return e;
  // Past the machine by the formula's lower bound already: refused as it is, nothing built.
  if (!training_footprint_fits(e, limit_bytes)) return e;

  // Neither the measured steps' weights nor their dropout may move the run's random stream.
  auto generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor rng = generator.get_state();
  StepBytes step;
  try {
    step = measure_step(config, vocab_size, segment_len, train_tokens);
  } catch (const c10::Error& error) {  // an allocation the machine refused: so would the run's
    generator.set_state(rng);
    throw InputError(fmt::format(
        "this configuration failed a training step while its memory was measured ({}); reduce "
        "train.batch_size, train.tgt_len or train.mem_len, or make the model smaller",
        error.what_without_backtrace()));
  }
  generator.set_state(rng);
  // Resident now, with what the steps freed handed back: LibTorch's code the step ran, its
  // thread pools and the corpus; not the step's own tensors, counted above.
  release_free_ram();
  e.process_bytes = current_rss_mb() * 1024.0 * 1024.0;

  e.measured = true;
  e.measured_streams = std::max<int64_t>(1, config.train.batch_size);
  // The step made the gradients (counted in gradient_bytes); the rest is its activations.
  e.activation_bytes = std::max(0.0, step.total - e.gradient_bytes);
  e.slack_bytes = kHeapSlack * step.small;
  return e;
}

}  // namespace txl
