#include "txl/model/transformer.h"

#include <algorithm>
#include <cmath>

#include "txl/model/kernels.h"
#include "txl/platform/runtime.h"

namespace txl {

int64_t output_row_block(int64_t rows, int64_t vocab_size, const ForwardOptions& options) {
  if (!options.targets.defined() || options.want_logits || options.query_block < 0 ||
      torch::GradMode::is_enabled())
    return rows;
  if (options.query_block > 0) return std::min(options.query_block, rows);
  const int64_t row_bytes = vocab_size * 4;
  if (row_bytes * rows <= kLogitBudgetBytes) return rows;
  return std::clamp<int64_t>(kLogitBudgetBytes / row_bytes, 1, rows);
}

namespace {

// Where the output layer's bias is added: in the product (layer) or, where the loss runs its
// float32 row kernels (float32 logits on the CPU), in the loss, on the fly (token_nll).
struct OutputBias {
  torch::Tensor layer, loss;  // one of them is the bias, the other undefined
};

OutputBias place_output_bias(const torch::Tensor& h, const torch::Tensor& bias, bool in_loss) {
  in_loss = in_loss && h.is_cpu() && h.scalar_type() == torch::kFloat32 &&
            bias.scalar_type() == torch::kFloat32 && !autocast_enabled(c10::DeviceType::CPU);
  return in_loss ? OutputBias{torch::Tensor(), bias} : OutputBias{bias, torch::Tensor()};
}

// h: [N, C], weight: [V, C], targets: [N] -> [N] float32, `block` rows at a time.
torch::Tensor blocked_output_nll(const torch::Tensor& h, const torch::Tensor& weight,
                                 const OutputBias& bias, const torch::Tensor& targets,
                                 int64_t block) {
  const int64_t rows = h.size(0);
  auto nll = torch::empty({rows}, h.options().dtype(torch::kFloat32));  // [N]
  for (int64_t first = 0; first < rows; first += block) {
    const int64_t n = std::min(block, rows - first);
    auto logits = affine(h.narrow(0, first, n), weight, bias.layer);  // [n, V]
    nll.narrow(0, first, n).copy_(token_nll(logits, targets.narrow(0, first, n), bias.loss));
  }
  return nll;
}

}  // namespace

TransformerLMImpl::TransformerLMImpl(const ModelConfig& c, int64_t vocab_size)
    : config_(c), vocab_size_(vocab_size) {
  TORCH_CHECK(vocab_size >= 2, "vocabulary must hold at least 2 tokens, got ", vocab_size);
  if (c.adaptive) {
    adaptive_input = register_module("adaptive_input",
                                     AdaptiveInput(*c.adaptive, c.d_model, vocab_size, c.init_std));
  } else {
    embedding = register_module("embedding", torch::nn::Embedding(vocab_size, c.d_model));
  }
  position = register_module("position", make_position_input(c));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t l = 0; l < c.n_layer; ++l) blocks->push_back(Block(c));
  if (c.pre_norm) {
    final_norm = register_module("final_norm",
                                 torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  }
  if (c.adaptive) {
    adaptive_softmax = register_module(
        "adaptive_softmax",
        AdaptiveSoftmax(*c.adaptive, c.d_model, vocab_size, c.tie_weights, c.init_std));
  } else if (!c.tie_weights) {
    output = register_module(
        "output", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, vocab_size).bias(false)));
  }
  output_bias = register_parameter("output_bias", torch::zeros({vocab_size}));
  torch::NoGradGuard no_grad;
  if (embedding) embedding->weight.normal_(0.0, c.init_std);
  if (output) output->weight.normal_(0.0, c.init_std);
}

torch::Tensor TransformerLMImpl::run_blocks(torch::Tensor h, const Memory& memory,
                                            PositionContext& pos, const ForwardOptions& options,
                                            std::vector<torch::Tensor>& layer_inputs,
                                            std::vector<torch::Tensor>& segment_kv) {
  const int64_t skip = options.score_from;
  layer_inputs.reserve(blocks->size());
  // Evaluation reads each layer's key/value projection kept with the memory, and keeps the
  // segment's for the next pass (memory.h); training projects the memory rows again.
  const bool evaluating = !is_training() && !torch::GradMode::is_enabled();
  const bool keep_projections = evaluating && options.keep_memory > 0;
  if (keep_projections) segment_kv.assign(blocks->size(), torch::Tensor());
  for (size_t l = 0; l < blocks->size(); ++l) {
    layer_inputs.push_back(h);
    auto mem = memory.empty() ? torch::Tensor() : memory.layers[l];  // [B, M, C]
    pos.memory_kv = evaluating && !memory.empty() ? memory.projection(l) : torch::Tensor();
    pos.segment_kv = keep_projections ? &segment_kv[l] : nullptr;
    const double layer = static_cast<double>(l);
    pos.layer = static_cast<int64_t>(l);
    if (options.progress) {
      // Attention is most of a long window's work: its blocks advance the layer's share.
      pos.attention_progress = [&options, layer](double f) { options.progress(layer + f); };
    }
    if (skip > 0 && l + 1 == blocks->size()) {
      // Only the scored queries; the context positions join the memory as keys. Every
      // encoding scores "the last Q' queries of K keys" (position_score.h), so the numbers are
      // those of the full layer's last rows.
      auto context = h.narrow(1, 0, skip);                            // [B, skip, C]
      mem = mem.defined() ? torch::cat({mem, context}, 1) : context;  // [B, M + skip, C]
      h = h.narrow(1, skip, h.size(1) - skip);                        // [B, S, C]
      pos.memory_kv = torch::Tensor();  // projected again with the context rows
      pos.segment_kv = nullptr;
    }
    h = blocks[l]->as<Block>()->forward(h, mem, pos);  // [B, Q, C] ([B, S, C] after the last)
    if (options.progress) options.progress(layer + 1);
  }
  return h;
}

LMOutput TransformerLMImpl::forward(const torch::Tensor& tokens, const Memory& memory,
                                    const ForwardOptions& options) {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be [B, Q], got ", tokens.sizes());
  TORCH_CHECK(memory.empty() || has_memory(), encoding_traits(config_.pos_encoding).name,
              " encoding takes no memory");
  TORCH_CHECK(memory.empty() || static_cast<int64_t>(memory.layers.size()) == config_.n_layer,
              "memory has ", memory.layers.size(), " layers, model has ", config_.n_layer);
  const int64_t mem_len = memory.length();
  TORCH_CHECK(options.score_from >= 0 && options.score_from < tokens.size(1), "score_from ",
              options.score_from, " must lie in [0, ", tokens.size(1), ")");

  auto h = (adaptive_input ? adaptive_input(tokens) : embedding(tokens)) *
           std::sqrt(static_cast<double>(config_.d_model));  // [B, Q, C]
  PositionContext pos;
  pos.clamp_len = options.clamp_len >= 0 ? options.clamp_len : config_.clamp_len;
  pos.aid = options.aid;
  pos.key_window = options.key_window;
  pos.query_block = options.query_block;
  pos.observer = options.observer;
  // A learned table stretches over the positions training reached (its rows past them
  // were never trained), and never past its own size.
  pos.train_len = options.train_len;
  if (options.aid == ExtrapolationAid::kInterpolate) {
    const int64_t limit = position_limit(config_);
    pos.train_len = options.train_len > 0 ? std::min(limit, options.train_len) : limit;
  }
  pos.aid_scale = aid_scale(options.aid, options.aid_factor, options.aid_length,
                            mem_len + tokens.size(1), pos.train_len);
  h = position->apply(h, mem_len, pos);  // [B, Q, C]
  h = apply_dropout(h, config_.dropout, is_training());

  std::vector<torch::Tensor> layer_inputs, segment_kv;
  h = run_blocks(h, memory, pos, options, layer_inputs, segment_kv);  // [B, S, C]
  if (final_norm) h = final_norm(h);
  h = apply_dropout(h, config_.dropout, is_training());

  LMOutput result;
  result.memory = update_memory(memory, layer_inputs, options.keep_memory, segment_kv);
  torch::Tensor targets;  // [B, S]
  if (options.targets.defined()) {
    TORCH_CHECK(options.targets.sizes() == tokens.sizes(), "targets ", options.targets.sizes(),
                " must match tokens ", tokens.sizes());
    targets = options.targets.narrow(1, options.score_from, h.size(1));
  }
  if (adaptive_softmax) {
    adaptive_output(h, targets, options, result);
    return result;
  }
  auto weight = output ? output->weight : embedding->weight;  // [V, C]
  const int64_t rows = h.size(0) * h.size(1);
  const int64_t block = output_row_block(rows, vocab_size_, options);
  const bool only_loss = targets.defined() && !options.want_logits;
  const auto bias = place_output_bias(h, output_bias, only_loss);
  if (block < rows) {
    result.nll =
        blocked_output_nll(h.reshape({rows, -1}), weight, bias, targets.reshape({-1}), block)
            .view(targets.sizes());  // [B, S]
    return result;
  }
  auto logits =
      affine(h, weight, bias.layer);  // [B, S, V], without the bias where the loss adds it
  if (targets.defined()) {
    result.nll = token_nll(logits.reshape({-1, vocab_size_}), targets.reshape({-1}), bias.loss)
                     .view(targets.sizes());  // [B, S]
  }
  if (options.want_logits || !options.targets.defined()) result.logits = logits;
  return result;
}

void TransformerLMImpl::adaptive_output(const torch::Tensor& h, const torch::Tensor& targets,
                                        const ForwardOptions& options, LMOutput& result) {
  const AdaptiveWeights w = adaptive_softmax->weights(*adaptive_input, output_bias);
  const ClusterLayout& layout = adaptive_input->layout();
  const int64_t rows = h.size(0) * h.size(1);
  const auto flat = h.reshape({rows, -1});  // [N, C]
  if (targets.defined()) {
    // Without gradients, in blocks of rows whose head and widest tail fit the logit budget.
    const int64_t width = layout.head_size() + layout.largest_tail();
    const int64_t block = output_row_block(rows, width, options);
    const auto flat_targets = targets.reshape({-1});  // [N]
    std::vector<torch::Tensor> parts;
    for (int64_t first = 0; first < rows; first += block) {
      const int64_t n = std::min(block, rows - first);
      parts.push_back(adaptive_nll(flat.narrow(0, first, n), flat_targets.narrow(0, first, n), w));
    }
    result.nll = (parts.size() == 1 ? parts[0] : torch::cat(parts)).view(targets.sizes());
  }
  if (!options.want_logits && targets.defined()) return;
  // The [N, V] log-probabilities are the result; blocks bound the temporaries beside them.
  const int64_t block = std::clamp<int64_t>(kLogitBudgetBytes / (vocab_size_ * 4), 1, rows);
  std::vector<torch::Tensor> parts;
  for (int64_t first = 0; first < rows; first += block)
    parts.push_back(adaptive_log_probs(flat.narrow(0, first, std::min(block, rows - first)), w));
  result.logits = torch::cat(parts).view({h.size(0), h.size(1), vocab_size_});  // [B, S, V]
}

TransformerLM make_model(const ModelConfig& config, int64_t vocab_size,
                         const torch::Device& device) {
  TransformerLM model(config, vocab_size);
  model->to(device);
  return model;
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace txl
