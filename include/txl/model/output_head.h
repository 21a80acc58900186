// The language model's two ends, each one seam with two implementations: the input embedding
// (a [V, C] table, or adaptive input) and the output head (the full softmax, or adaptive
// softmax). TransformerLM asks them and never which one it holds (its forward reads as
// embed, blocks, head); the configuration-level questions (parameters, logit memory) are
// answered from the same place for an estimate before anything is built (model_size.h).
//
// Shapes: B streams, S scored positions, C = d_model, V words, N = B * S rows.
// The modules stay the model's (registered under the names checkpoints and weight files
// carry: embedding, output, output_bias, adaptive_input, adaptive_softmax); a seam holds
// handles to them, so moving or loading the model moves and loads what the seam reads.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "txl/config/config.h"
#include "txl/model/adaptive_softmax.h"

namespace txl {

struct ForwardOptions;

class InputEmbedding {
 public:
  virtual ~InputEmbedding() = default;
  // tokens [B, Q] -> [B, Q, C], not yet scaled by sqrt(C) (the model scales every embedding).
  virtual torch::Tensor embed(const torch::Tensor& tokens) = 0;
};

// What a head's scores are: both give the model's distribution under a softmax.
enum class ScoreKind {
  kLogits,    // unnormalised (the full softmax)
  kLogProbs,  // log-probabilities (adaptive softmax builds them cluster by cluster)
};

struct HeadOutput {
  torch::Tensor nll;     // [B, S] float32 with targets
  torch::Tensor scores;  // [B, S, V] with options.want_scores or without targets
};

class OutputHead {
 public:
  virtual ~OutputHead() = default;
  // h [B, S, C], targets [B, S] (or undefined) -> the NLL and/or the scores. Without
  // gradients and without want_scores, in blocks of rows (output_row_block, transformer.h) so
  // that the [N, V] scores never exist at once.
  virtual HeadOutput forward(const torch::Tensor& h, const torch::Tensor& targets,
                             const ForwardOptions& options) = 0;
  virtual ScoreKind score_kind() const = 0;
  // Floats of the widest scores one row needs while the NLL is computed (V, or adaptive's
  // head and widest tail): what output_row_block sizes its blocks by.
  virtual int64_t row_width() const = 0;
};

// The full softmax: an embedding table and a [V, C] output weight, the table itself when
// tied (`output` null).
std::unique_ptr<InputEmbedding> make_table_embedding(torch::nn::Embedding table);
std::unique_ptr<OutputHead> make_full_softmax_head(torch::nn::Embedding table,
                                                   torch::nn::Linear output,
                                                   const torch::Tensor& output_bias);

// Adaptive input and softmax (adaptive_softmax.h); output_bias [V] is sliced per cluster.
std::unique_ptr<InputEmbedding> make_adaptive_embedding(AdaptiveInput input);
std::unique_ptr<OutputHead> make_adaptive_head(AdaptiveInput input, AdaptiveSoftmax softmax,
                                               const torch::Tensor& output_bias);

}  // namespace txl
