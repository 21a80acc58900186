// What `txl eval` and `txl compare` ask for, turned into one EvalRequest per length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "txl/eval/evaluate.h"

namespace txl {

// Per-position losses are always collected in this many buckets (cheap), so cached results
// serve requests with and without --per-position. Lengths up to 16 get one bucket per position.
inline constexpr int64_t kPositionBuckets = 16;

struct EvalSettings {
  std::string protocol = default_protocol_name();  // a registered protocol (protocol.h)
  // The protocol's settings given (--stride, a study's mem_lens value, ...); the rest take
  // the protocol's defaults when a length resolves them.
  ProtocolSettings protocol_settings;
  int64_t clamp_len = -1;  // -1 = the run's model.clamp_len
  int64_t max_tokens = 0;  // 0 = the whole split
  Precision precision = Precision::kFp32;
  ExtrapolationAid aid = ExtrapolationAid::kNone;  // --aid
  double aid_factor = 0.0;                         // --aid-factor (0 = derived)
};

// What `txl eval` and `txl compare` evaluate each run at (beside which runs): the settings,
// lengths and split (empty: the run's, or the first run's), the checkpoint and the cache.
struct EvalPlan {
  EvalSettings settings;
  std::vector<int64_t> lengths;  // empty: the run's eval.lengths
  std::string split;             // empty: the run's eval.split
  // txl eval --text: files scored instead of a split, each a document of its own (no memory
  // crosses from one to the next), and the total over them; "-" is standard input.
  std::vector<std::string> texts;
  std::string per_token;  // --per-token FILE (.tsv, .jsonl): every scored token's NLL (per_token.h)
  std::string checkpoint = "best";
  torch::Device device = torch::kCPU;  // --device, resolved: where the models run
  bool read_cache = true;
  bool per_position = false;
};

// train_len: the run's training_length (what a derived aid factor divides by).
EvalRequest make_eval_request(const EvalSettings& settings, int64_t length, int64_t batch_tokens,
                              int64_t train_len = 0);

}  // namespace txl
