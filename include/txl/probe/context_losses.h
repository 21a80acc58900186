// The loss of a target given exactly c tokens of context, l(c, t) = -log P(x_t | the c
// tokens before t), over a grid of c and a sample of targets t: what RECL (recl_search.h) is
// computed from.
//
// Every (c, t) is its own window of c + 1 tokens, x[t - c .. t], of which only the last
// target is scored: the loss is exact for every c, with no stride or shared window that
// would give some targets more context than c. A model with memory reads its c tokens as
// one segment (the attention it gives memory rows, without the cached states). Cost:
// targets x sum over the grid of c tokens forwarded.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "txl/probe/probe_scoring.h"
#include "txl/probe/probe_shard.h"

namespace txl {

struct ContextLossTable {
  std::vector<std::string> models;                       // N
  std::vector<int64_t> contexts;                         // the grid c_0 < c_1 < ... (K values)
  std::vector<int64_t> targets;                          // n positions of the split
  uint64_t seed = 0;                                     // of the targets' draw
  std::vector<std::vector<std::vector<double>>> losses;  // [N][K][n] nats
};

// std::invalid_argument when the sizes disagree or the grid is not strictly increasing.
void check_loss_table(const ContextLossTable& table);
// One table of every model: the tables must share contexts and targets (InputError).
ContextLossTable group_loss_tables(const std::vector<ContextLossTable>& tables);
// Per model and context, the mean loss over the targets.               -> [N][K]
std::vector<std::vector<double>> mean_losses(const ContextLossTable& table);

// first, first + step, ..., up to last (inclusive when it falls on the grid).
std::vector<int64_t> context_grid(int64_t first, int64_t step, int64_t last);

struct ContextLossRequest {
  std::vector<int64_t> contexts;
  int64_t targets = 500;
  uint64_t seed = 1;
  ProbeScoreOptions scoring;
  std::function<void(double)> progress;  // fraction of the tokens forwarded so far; may be empty
};

// Shard `shard`'s part (probe_shard.h): per context c, one group of a window per target, each
// window's loss; the drawn targets beside them. InputError when the split is too short.
nlohmann::json score_context_losses_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                          const ContextLossRequest& request,
                                          const ProbeShard& shard);
// The table of one model (N = 1), named `name`, from every shard's partial in shard order.
ContextLossTable finish_context_losses(const std::vector<nlohmann::json>& partials,
                                       const ContextLossRequest& request, const std::string& name);
// The table of one model (N = 1), named `name`; the targets are drawn from the positions
// with at least contexts.back() tokens before them. One process: the finish of shard 0 of 1.
ContextLossTable measure_context_losses(TransformerLM& model, const std::vector<int32_t>& ids,
                                        const ContextLossRequest& request, const std::string& name);

}  // namespace txl
