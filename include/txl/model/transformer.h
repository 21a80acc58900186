// The Transformer-XL language model: embedding (scaled by sqrt(C)), n_layer blocks with
// segment-level memory, output layer (tied to the embedding by default).
// Shapes follow the legend in positional.h.
#pragma once

#include <torch/torch.h>

#include <functional>

#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/model/adaptive_softmax.h"
#include "txl/model/block.h"
#include "txl/model/memory.h"
#include "txl/model/output_head.h"

namespace txl {

struct ForwardOptions {
  torch::Tensor targets;    // [B, Q] next-token ids; when set, `nll` is returned
  int64_t keep_memory = 0;  // how many positions of memory to return for the next segment
  int64_t clamp_len = -1;   // relative distance cap for this pass (-1: model.clamp_len)
  // same_length (positional.h, attention_mask): every query attends over at most this many
  // of the most recent keys, itself included; the reference sets it to mem_len. 0 = off.
  int64_t key_window = 0;
  ExtrapolationAid aid = ExtrapolationAid::kNone;  // evaluation aid (config/encodings.h)
  double aid_factor = 0.0;                         // s; 0 = derived from aid_length and train_len
  int64_t aid_length = 0;                          // the evaluated length s derives from
  int64_t train_len = 0;     // keys per training segment (tgt_len + mem_len of the run)
  bool want_scores = false;  // LMOutput::scores even with targets
  // Positions before score_from are context only (0 <= score_from < Q): `nll` and `scores`
  // cover positions score_from..Q-1, and the last layer computes its output only for those
  // queries, the positions before them attending as its memory. The same numbers as the tail
  // of a full pass, without the work whose results a caller would drop (sliding windows
  // score only their last `stride` positions).
  int64_t score_from = 0;
  // Evaluation without gradients: queries per attention block (position_score.h) and rows
  // per output block (output_row_block). 0 = automatic (blocks only past kScoreBudgetBytes
  // of scores / kLogitBudgetBytes of logits), < 0 = never.
  int64_t query_block = 0;
  // Progress of long evaluations: called with the layers done so far, fractional inside a
  // layer that attends in query blocks (0 < x <= n_layer). May be empty.
  std::function<void(double)> progress;
  // Reads every layer's attention probabilities (attention_observer.h); null = none.
  AttentionObserver* observer = nullptr;
};

// ForwardOptions::key_window under Transformer-XL's same_length: every query attends over the
// mem_len most recent keys; 0 (no window) without it. Training (train.same_length) and the
// memory method (--same-length) both set it from here.
inline int64_t same_length_key_window(bool same_length, int64_t mem_len) {
  return same_length ? mem_len : 0;
}

// Without gradients, with targets and without want_scores, the output layer and the NLL run
// in blocks of rows so that the [B, Q, V] logits never exist at once (a 33k-word vocabulary
// at L = 65536 would need 8.7 GB): blocks of query_block rows when it is > 0, otherwise of
// kLogitBudgetBytes of float32 logits; query_block < 0 or gradients: one pass.
inline constexpr int64_t kLogitBudgetBytes = int64_t{64} << 20;
// `row_width`: the floats one row's scores take (OutputHead::row_width).
int64_t output_row_block(int64_t rows, int64_t row_width, const ForwardOptions& options);

// S = Q - score_from scored positions (S = Q by default).
struct LMOutput {
  torch::Tensor nll;     // [B, S] float32 per-token negative log-likelihood (with targets)
  torch::Tensor scores;  // [B, S, V] (want_scores or no targets); a softmax of them is the
                         // model's distribution: logits, or adaptive's log-probabilities
  ScoreKind score_kind = ScoreKind::kLogits;
  Memory memory;  // for the next segment (empty when keep_memory == 0)
};

class TransformerLMImpl : public torch::nn::Module {
 public:
  TransformerLMImpl(const ModelConfig& config, int64_t vocab_size);

  // tokens: [B, Q] int64; memory from the previous segment of the same streams (may be empty).
  LMOutput forward(const torch::Tensor& tokens, const Memory& memory,
                   const ForwardOptions& options);

  const ModelConfig& config() const { return config_; }
  int64_t vocab_size() const { return vocab_size_; }
  bool has_memory() const { return encoding_traits(config_.pos_encoding).takes_memory; }
  // Where the weights are (module->to(device) moves them); inputs must be there too.
  torch::Device device() const { return output_bias.device(); }

  // The modules behind the two seams (output_head.h), under the names checkpoints carry.
  torch::nn::Embedding embedding{nullptr};      // without model.adaptive
  AdaptiveInput adaptive_input{nullptr};        // with model.adaptive (adaptive_softmax.h)
  AdaptiveSoftmax adaptive_softmax{nullptr};    // with model.adaptive
  std::shared_ptr<PositionInputImpl> position;  // the encoding's input side (no weights for most)
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};  // pre-norm only
  torch::nn::Linear output{nullptr};         // untied output layer only (full softmax)
  torch::Tensor output_bias;                 // [V] (the adaptive softmax's too)

 private:
  // The blocks over h [B, Q, C] (each layer's input appended to layer_inputs), the last one
  // only for the queries from options.score_from on.                          -> [B, S, C]
  // segment_kv: each layer's key/value projection of its segment rows, where evaluation
  // keeps them with the memory (memory.h); left empty otherwise.
  torch::Tensor run_blocks(torch::Tensor h, const Memory& memory, PositionContext& pos,
                           const ForwardOptions& options, std::vector<torch::Tensor>& layer_inputs,
                           std::vector<torch::Tensor>& segment_kv);
  // The encoding's view of this pass: clamp, aid, windows, the lengths its scale derives from.
  PositionContext position_context(const ForwardOptions& options, int64_t mem_len,
                                   int64_t q_len) const;
  void check_inputs(const torch::Tensor& tokens, const Memory& memory,
                    const ForwardOptions& options) const;

  ModelConfig config_;
  int64_t vocab_size_;
  std::unique_ptr<InputEmbedding> input_;  // over embedding or adaptive_input
  std::unique_ptr<OutputHead> head_;       // over output/embedding or adaptive_softmax
};
TORCH_MODULE(TransformerLM);

// A model for `config` on `device`: its weights are drawn on the CPU (so a seed gives the
// same initial model on every device) and then moved, before anything takes their handles.
TransformerLM make_model(const ModelConfig& config, int64_t vocab_size,
                         const torch::Device& device);

// Number of scalars in module.parameters(): one count, embedding and output layer included.
int64_t count_parameters(const torch::nn::Module& module);

}  // namespace txl
