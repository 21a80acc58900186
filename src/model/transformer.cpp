#include "txl/model/transformer.h"

#include <algorithm>
#include <cmath>

#include "txl/model/kernels.h"

namespace txl {

int64_t output_row_block(int64_t rows, int64_t row_width, const ForwardOptions& options) {
  if (!options.targets.defined() || options.want_scores || options.query_block < 0 ||
      torch::GradMode::is_enabled())
    return rows;
  if (options.query_block > 0) return std::min(options.query_block, rows);
  const int64_t row_bytes = row_width * 4;
  if (row_bytes * rows <= kLogitBudgetBytes) return rows;
  return std::clamp<int64_t>(kLogitBudgetBytes / row_bytes, 1, rows);
}

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
  if (c.adaptive) {
    input_ = make_adaptive_embedding(adaptive_input);
    head_ = make_adaptive_head(adaptive_input, adaptive_softmax, output_bias);
  } else {
    input_ = make_table_embedding(embedding);
    head_ = make_full_softmax_head(embedding, output, output_bias);
  }
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

void TransformerLMImpl::check_inputs(const torch::Tensor& tokens, const Memory& memory,
                                     const ForwardOptions& options) const {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be [B, Q], got ", tokens.sizes());
  TORCH_CHECK(memory.empty() || has_memory(), encoding_traits(config_.pos_encoding).name,
              " encoding takes no memory");
  TORCH_CHECK(memory.empty() || static_cast<int64_t>(memory.layers.size()) == config_.n_layer,
              "memory has ", memory.layers.size(), " layers, model has ", config_.n_layer);
  TORCH_CHECK(options.score_from >= 0 && options.score_from < tokens.size(1), "score_from ",
              options.score_from, " must lie in [0, ", tokens.size(1), ")");
  TORCH_CHECK(!options.targets.defined() || options.targets.sizes() == tokens.sizes(), "targets ",
              options.targets.sizes(), " must match tokens ", tokens.sizes());
}

PositionContext TransformerLMImpl::position_context(const ForwardOptions& options, int64_t mem_len,
                                                    int64_t q_len) const {
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
  pos.aid_scale = aid_scale(options.aid, options.aid_factor, options.aid_length, mem_len + q_len,
                            pos.train_len);
  return pos;
}

LMOutput TransformerLMImpl::forward(const torch::Tensor& tokens, const Memory& memory,
                                    const ForwardOptions& options) {
  check_inputs(tokens, memory, options);
  const int64_t mem_len = memory.length();
  // Embed: the tokens, scaled by sqrt(C), then the encoding's input side.    -> [B, Q, C]
  auto h = input_->embed(tokens) * std::sqrt(static_cast<double>(config_.d_model));
  PositionContext pos = position_context(options, mem_len, tokens.size(1));
  h = position->apply(h, mem_len, pos);
  h = apply_dropout(h, config_.dropout, is_training());

  // Blocks: each layer's input joins the memory for the next segment.      -> [B, S, C]
  std::vector<torch::Tensor> layer_inputs, segment_kv;
  h = run_blocks(h, memory, pos, options, layer_inputs, segment_kv);
  if (final_norm) h = final_norm(h);
  h = apply_dropout(h, config_.dropout, is_training());
  LMOutput result;
  result.memory = update_memory(memory, layer_inputs, options.keep_memory, segment_kv);

  // Head: the NLL of the scored positions' targets, and/or their scores.
  const torch::Tensor targets =  // [B, S]
      options.targets.defined() ? options.targets.narrow(1, options.score_from, h.size(1))
                                : torch::Tensor();
  HeadOutput out = head_->forward(h, targets, options);
  result.nll = std::move(out.nll);
  result.scores = std::move(out.scores);
  result.score_kind = head_->score_kind();
  return result;
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
