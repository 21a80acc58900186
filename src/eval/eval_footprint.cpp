#include "txl/eval/eval_footprint.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/eval/protocol.h"
#include "txl/model/model_size.h"
#include "txl/model/position_score.h"
#include "txl/platform/resources.h"
#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

constexpr double kFp32Bytes = 4.0;

}  // namespace

int64_t scored_targets(const EvalRequest& request, int64_t split_tokens) {
  const int64_t targets = std::max<int64_t>(0, split_tokens - 1);
  return request.max_tokens > 0 ? std::min(targets, request.max_tokens) : targets;
}

// What the protocol's plan forwards at most in one pass (protocol.h).
EvalPassShape largest_eval_pass(const EvalRequest& r, int64_t targets) {
  if (targets < 1 || r.length < 1) return {};
  return eval_protocol(r.protocol).largest_pass(r, targets);
}

EvalFootprint estimate_eval_footprint(const ModelConfig& m, int64_t vocab_size,
                                      const EvalRequest& request, int64_t targets) {
  EvalFootprint e;
  e.pass = largest_eval_pass(request, targets);
  const double B = static_cast<double>(e.pass.batch), W = static_cast<double>(e.pass.queries),
               K = static_cast<double>(e.pass.keys), M = K - W;
  const double C = static_cast<double>(m.d_model), H = static_cast<double>(m.n_head),
               D = static_cast<double>(m.d_head), F = static_cast<double>(m.d_inner),
               N = static_cast<double>(m.n_layer);
  const double hd = H * D;
  // Every layer's input (kept for the memory update), then one layer at a time: queries,
  // context and its copy, the output projection and the residual, the feed-forward's inner
  // activation; keys and values with their input over K; the encoding's per-pass position
  // tensors (at most [K, C] and [K, H*D], relative sinusoids and their projection).
  e.hidden_bytes = kFp32Bytes * (B * W * C * (N + 1) + B * W * (3 * hd + F + 2 * C) +
                                 B * K * (2 * hd + C) + K * (C + hd));
  // Scores, probabilities and one position-term tensor of the same size, for one block of
  // queries (all of them when the scores stay under kScoreBudgetBytes).
  const int64_t block = attention_query_block(e.pass.batch, m.n_head, e.pass.queries, e.pass.keys,
                                              /*requested=*/0, /*grad=*/false);
  e.attention_bytes = kFp32Bytes * 3 * B * H * static_cast<double>(block) * K;
  // Logits and log-probabilities of one output block (transformer.h), the NLL of all rows; a
  // row is as wide as the run's head computes it (adaptive: its head and widest tail).
  const double rows = B * W, width = static_cast<double>(output_row_width(m, vocab_size));
  const double out_rows = std::min(rows, std::max(1.0, kLogitBudgetBytes / (width * kFp32Bytes)));
  e.output_bytes = kFp32Bytes * (2 * out_rows * width + rows);
  // Memory in and the memory returned for the next segment, every layer: the rows and the
  // key/value projection of them that evaluation keeps (memory.h).
  e.memory_bytes = kFp32Bytes * 2 * N * B * M * (C + 2 * hd);
  return e;
}

void check_eval_footprint(const EvalFootprint& e, const EvalRequest& r, double available_bytes) {
  if (available_bytes <= 0 || e.total_bytes() <= available_bytes) return;
  const EvalProtocol& protocol = eval_protocol(r.protocol);
  const std::string pass = protocol.describe_pass(e.pass);
  const std::string hint = protocol.memory_hint(e.pass);
  throw InputError(fmt::format(
      "evaluating at length {} ({}) needs about {} of memory ({} of hidden states, {} of "
      "attention scores, {} of logits, {} of memory) but only {} of memory is available; {}",
      r.length, pass, format_bytes(e.total_bytes()), format_bytes(e.hidden_bytes),
      format_bytes(e.attention_bytes), format_bytes(e.output_bytes), format_bytes(e.memory_bytes),
      format_bytes(available_bytes), hint));
}

void check_eval_fits(const TransformerLM& model, const EvalRequest& request, int64_t split_tokens) {
  const auto estimate = estimate_eval_footprint(model->config(), model->vocab_size(), request,
                                                scored_targets(request, split_tokens));
  check_eval_footprint(estimate, request, available_ram_bytes());
}

}  // namespace txl
