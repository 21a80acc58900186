// Text generation from a trained model, one token at a time.
//
// Encodings with memory (relative, relative_learned) carry Transformer-XL memory across
// the generated tokens: each new token is one query attending to itself plus up to
// `context` earlier positions held in memory, so a step costs O(context), not O(n^2).
// The absolute encoding has no memory: each step re-runs the last `context` tokens as one
// window (positions 0..context-1, as in training).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "txl/model/memory.h"
#include "txl/model/transformer.h"

namespace txl {

// SplitMix64 (Steele, Lea, Flood 2014): small and fast, with the same output on every
// platform, unlike the std:: distributions whose algorithms the standard leaves open.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }          // bias < n / 2^64
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

// Feeds tokens to a model and returns the logits for the token after the last one fed.
class ContextFeeder {
 public:
  // context: memory positions kept (memory encodings) or window length (absolute), >= 1.
  // chunk: the most tokens fed in one forward pass (prompts are fed in chunks).
  ContextFeeder(TransformerLM& model, int64_t context, int64_t chunk);

  // tokens must not be empty. Returns float32 logits [V].
  torch::Tensor feed(const std::vector<int64_t>& tokens);

 private:
  TransformerLM& model_;
  int64_t context_;
  int64_t chunk_;
  Memory memory_;                // memory encodings
  std::vector<int64_t> window_;  // absolute: the last `context` tokens
};

struct SamplingOptions {
  int64_t tokens = 200;      // tokens to generate
  double temperature = 1.0;  // > 0; logits are divided by it
  int64_t top_k = 0;         // 0 = the whole vocabulary
  uint64_t seed = 1;
  int64_t context = 0;  // see ContextFeeder; >= 1
  int64_t chunk = 128;  // prompt chunk length
};

// Draws one token id from logits [V] with temperature and top-k.
int64_t draw_token(const torch::Tensor& logits, double temperature, int64_t top_k, SplitMix64& rng);

// Generates options.tokens ids after `prompt` (not empty). The model is put in eval mode.
// The same model, prompt and options always give the same ids.
std::vector<int64_t> sample_tokens(TransformerLM& model, const std::vector<int64_t>& prompt,
                                   const SamplingOptions& options);

}  // namespace txl
