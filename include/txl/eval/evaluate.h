// Perplexity of a model on a token stream, by one of the registered protocols (protocol.h
// says what each is and holds its plan of passes; these are the three so far):
//
//   nonoverlap  windows of L tokens, no memory, every token scored (ALiBi's main protocol)
//   sliding     windows of L advanced by S; the first window scored whole, then only the
//               last S tokens of each window (S = 1: every target t is predicted from exactly
//               min(t, L-1) earlier tokens plus the current one)
//   memory      Transformer-XL: segments of L with up to mem_len positions of memory carried
//               across segments of each stream; every token scored once
//
// Perplexity is exp(total NLL / total tokens) with NLL summed in double precision.
// Per-window sums are kept so that intervals (interval.h) and paired differences between
// runs can be computed over the same windows afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "txl/config/config.h"
#include "txl/config/encodings.h"
#include "txl/eval/eval_request.h"
#include "txl/model/transformer.h"
#include "txl/platform/runtime.h"

namespace txl {

// What every evaluation runs under, restored on every exit path: the model in eval mode (its
// train/eval mode given back afterwards), no gradients, and autocast for bf16.
class EvalModeGuard {
 public:
  EvalModeGuard(TransformerLM& model, Precision precision)
      : model_(model), was_training_(model->is_training()), autocast_(precision, model->device()) {
    model_->eval();
  }
  ~EvalModeGuard() { model_->train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  TransformerLM& model_;
  bool was_training_;
  torch::NoGradGuard no_grad_;
  AutocastGuard autocast_;
};

// The longest key range a run saw in training: tgt_len, plus mem_len where the encoding
// takes memory. What a derived aid factor divides by.
int64_t training_length(const Config& config);

// "yarn", "pi x4", "" for none: how reports name an aid.
std::string aid_label(ExtrapolationAid aid, double factor);

struct EvalResult {
  std::string protocol = default_protocol_name();
  int64_t length = 0;
  ProtocolSettings settings;  // every setting of the protocol, as resolved for this length
  ExtrapolationAid aid = ExtrapolationAid::kNone;
  double aid_factor = 0.0;  // as requested (0 = derived per length)
  int64_t tokens = 0;       // tokens scored
  double nll = 0.0;         // total NLL (nats)
  // Per window (nonoverlap, sliding) or per segment of one stream (memory): NLL sum and
  // tokens scored. Windows come in a fixed order (memory: segment-major, stream-minor), so
  // two models evaluated with the same request have aligned windows.
  std::vector<double> window_nll;
  std::vector<int64_t> window_tokens;
  std::vector<double> position_nll;     // mean NLL per position bucket (position_buckets > 0)
  std::vector<int64_t> position_start;  // first window position of each bucket
  std::vector<int64_t> position_count;  // tokens scored in each bucket

  double mean_nll() const { return tokens > 0 ? nll / static_cast<double>(tokens) : 0.0; }
  double ppl() const;
  double bpc() const;  // bits per token (= per character for char runs)
};

// How far an evaluation is: windows (memory: segments of a stream) done, and the fraction of
// the tokens to forward that have passed all layers (a long window advances layer by layer).
struct EvalProgress {
  int64_t windows_done = 0;
  int64_t windows = 0;
  double fraction = 0.0;  // 0..1
};
using EvalProgressFn = std::function<void(const EvalProgress&)>;

// The longest window (memory: segment) a result scored: its length, or fewer tokens when the
// split (or max_tokens) is shorter than the length, which then scores the whole split as
// shorter windows; reports label such rows (short_window_note in report.h).
int64_t longest_window(const EvalResult& result);

// Scores `ids` (the whole split as one stream). The model is put in eval mode and restored.
// First checks the request (check_eval_request) and that it fits in the memory available
// (eval_footprint.h): InputError before anything is allocated. `progress`, when set, is called
// after every layer of every pass.
EvalResult evaluate(TransformerLM& model, const std::vector<int32_t>& ids,
                    const EvalRequest& request, const EvalProgressFn& progress = {});

// Every scored token's NLL, in text order whatever order the protocol works in: target[i] is
// ids[i + 1]'s NLL in nats (NaN where the evaluation scored none: past max_tokens) and
// context[i] the tokens it was conditioned on (window and memory; same_length's window caps
// it). The sum of target equals the result's nll.
struct TokenScores {
  std::vector<double> nll;
  std::vector<int64_t> context;
};
EvalResult evaluate(TransformerLM& model, const std::vector<int32_t>& ids,
                    const EvalRequest& request, const EvalProgressFn& progress,
                    TokenScores* tokens);

// request_unavailable (protocol.h) as a check: InputError for a request that is refused or
// n/a, naming the option or the reason.
void check_eval_request(const TransformerLM& model, const EvalRequest& request);

}  // namespace txl
