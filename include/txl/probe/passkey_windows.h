// Teacher-forced passkey (after Landmark Attention, YaRN, LongLoRA; teacher-forced so that a
// small LM that follows no instruction can be probed): is a key hidden deep in the context
// retrieved at the end?
//
// A window of exactly L tokens:
//   filler[0, s) | cue | key | filler[s, F) | cue | key
// with F = L - 2 (cue_len + key_len) tokens of filler (one contiguous stretch of the split),
// s = round(depth x F) the needle's start (depth 0: the first token; depth 1: just before the
// final cue), the cue a stretch of cue_len tokens of the split, and the key key_len tokens
// drawn at random from the candidates (digits for a char vocabulary that has them, otherwise
// the tokens rarest in the split) among those that occur neither in the filler nor in the
// cue. The final key is scored teacher-forced: accuracy = every key token is the argmax,
// log-probability = the sum of its tokens' log-probabilities.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "txl/data/vocab.h"
#include "txl/eval/interval.h"
#include "txl/probe/probe_scoring.h"
#include "txl/probe/probe_shard.h"

namespace txl {

struct PasskeyProbeOptions {
  std::vector<int64_t> lengths;  // L
  std::vector<double> depths;    // in [0, 1]
  int64_t trials = 20;           // windows per (length, depth)
  int64_t key_len = 5;
  int64_t cue_len = 8;
  uint64_t seed = 1;
  ProbeScoreOptions scoring;
  std::function<void(double)> progress;  // fraction of the tokens forwarded so far; may be empty
};

// Where the needle (the first cue) starts in a window of `length` tokens.
int64_t passkey_needle_start(int64_t length, double depth, int64_t cue_len, int64_t key_len);

// Key tokens: the char vocabulary's digits when it has two or more, otherwise up to `count`
// tokens of the vocabulary (<unk> and <eos> left out) rarest in `ids`.
std::vector<int32_t> passkey_candidates(const Vocab& vocab, const std::vector<int32_t>& ids,
                                        int64_t count = 100);

struct PasskeyInstance {
  int64_t length = 0;
  double depth = 0.0;
  std::vector<int32_t> window;  // exactly `length` tokens
  int64_t needle_start = 0;     // first cue token
  int64_t key_start = 0;        // first token of the hidden key
  std::vector<int32_t> key;
};

// Every (length, depth) cell's trials, cells in length-major order. InputError when the
// split is shorter than a window's filler and cue, when a window cannot hold two cues and
// keys, or when every candidate occurs in a window's filler.
std::vector<PasskeyInstance> build_passkey_instances(const std::vector<int32_t>& ids,
                                                     const std::vector<int32_t>& candidates,
                                                     const PasskeyProbeOptions& options);

struct PasskeyCell {
  int64_t length = 0;
  double depth = 0.0;
  int64_t key_start = 0;  // of the first trial (the same for every trial of a cell)
  int64_t distance = 0;   // from the hidden key to the scored one, in tokens
  int64_t trials = 0;
  int64_t correct = 0;
  double accuracy = 0.0;
  Interval accuracy_interval;  // Wilson, 95%
  double logprob = 0.0;        // mean over trials of the key's log-probability (nats)
  double token_logprob = 0.0;  // the same per key token
  Interval logprob_interval;   // of logprob over trials
};

struct PasskeyProbeResult {
  uint64_t seed = 0;
  int64_t key_len = 0, cue_len = 0;
  std::vector<int32_t> candidates;
  std::vector<PasskeyCell> cells;
};

// Shard `shard`'s part (probe_shard.h): per (length, depth) cell, one group of `trials`
// windows, each window's {"correct": 0 or 1, "logprob"}; the candidates beside them.
nlohmann::json score_passkey_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                   const std::vector<int32_t>& candidates,
                                   const PasskeyProbeOptions& options, const ProbeShard& shard);
// The result from every shard's partial, in shard order.
PasskeyProbeResult finish_passkey_probe(const std::vector<nlohmann::json>& partials,
                                        const PasskeyProbeOptions& options);
// One process: the finish of shard 0 of 1.
PasskeyProbeResult run_passkey_probe(TransformerLM& model, const std::vector<int32_t>& ids,
                                     const std::vector<int32_t>& candidates,
                                     const PasskeyProbeOptions& options);

nlohmann::json to_json(const PasskeyProbeResult& result);

}  // namespace txl
