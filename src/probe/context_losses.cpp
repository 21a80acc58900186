#include "txl/probe/context_losses.h"

#include <spdlog/fmt/fmt.h>

#include <stdexcept>

#include "txl/util/error.h"

namespace txl {

void check_loss_table(const ContextLossTable& t) {
  const auto bad = [](const std::string& what) {
    throw std::invalid_argument("context loss table: " + what);
  };
  if (t.contexts.empty() || t.targets.empty()) bad("no contexts or no targets");
  for (size_t k = 1; k < t.contexts.size(); ++k) {
    if (t.contexts[k] <= t.contexts[k - 1]) bad("contexts must increase");
  }
  if (t.losses.size() != t.models.size()) bad("one loss block per model");
  for (const auto& model : t.losses) {
    if (model.size() != t.contexts.size()) bad("one row per context");
    for (const auto& row : model) {
      if (row.size() != t.targets.size()) bad("one loss per target");
    }
  }
}

ContextLossTable group_loss_tables(const std::vector<ContextLossTable>& tables) {
  if (tables.empty()) throw std::invalid_argument("group_loss_tables: no tables");
  ContextLossTable group = tables.front();
  group.models.clear();
  group.losses.clear();
  for (const auto& t : tables) {
    check_loss_table(t);
    if (t.contexts != group.contexts || t.targets != group.targets) {
      throw InputError(fmt::format(
          "RECL needs every model measured on the same contexts and targets; '{}' differs "
          "(give every run the same recl options and --probe-seed)",
          t.models.empty() ? "?" : t.models.front()));
    }
    group.models.insert(group.models.end(), t.models.begin(), t.models.end());
    group.losses.insert(group.losses.end(), t.losses.begin(), t.losses.end());
  }
  return group;
}

std::vector<std::vector<double>> mean_losses(const ContextLossTable& t) {
  std::vector<std::vector<double>> out;
  for (const auto& model : t.losses) {
    out.emplace_back();
    for (const auto& row : model) out.back().push_back(mean_of(row));
  }
  return out;
}

std::vector<int64_t> context_grid(int64_t first, int64_t step, int64_t last) {
  if (first < 1 || step < 1 || last < first)
    throw std::invalid_argument("context_grid needs 1 <= first <= last and step >= 1");
  std::vector<int64_t> grid;
  for (int64_t c = first; c <= last; c += step) grid.push_back(c);
  return grid;
}

nlohmann::json score_context_losses_shard(TransformerLM& model, const std::vector<int32_t>& ids,
                                          const ContextLossRequest& request,
                                          const ProbeShard& shard) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t longest = request.contexts.back();
  if (longest >= n) {
    throw InputError(
        fmt::format("recl: a context of {} tokens leaves no target in the evaluated "
                    "split ({} tokens)",
                    longest, n));
  }
  SplitMix64 rng(request.seed);
  const auto targets = draw_positions(rng, request.targets, longest, n);
  std::vector<WindowGroup> groups;  // per context c: a window of c + 1 tokens per target
  for (const int64_t c : request.contexts) groups.push_back({request.targets, c + 1});
  const auto blocks = shard_windows(groups, request.scoring.batch_tokens, shard);
  double total = 0, done = 0;  // tokens this shard forwards
  for (size_t g = 0; g < groups.size(); ++g)
    total += double(blocks[g].second - blocks[g].first) * double(groups[g].length);
  nlohmann::json pieces = nlohmann::json::array();
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t c = request.contexts[g];
    const auto [first, end] = blocks[g];
    if (first == end) continue;
    std::vector<std::vector<int32_t>> windows;
    for (int64_t j = first; j < end; ++j) {
      const int64_t t = targets[size_t(j)];
      windows.emplace_back(ids.begin() + (t - c), ids.begin() + t + 1);
    }
    nlohmann::json losses = nlohmann::json::array();
    for (const auto& w : score_windows(model, windows, 1, request.scoring).nll)
      losses.push_back(w.front());
    pieces.push_back(shard_piece(g, first, end, std::move(losses)));
    done += double(end - first) * double(c + 1);
    if (request.progress) request.progress(done / total);
  }
  return {{"targets", targets}, {"pieces", pieces}};
}

ContextLossTable finish_context_losses(const std::vector<nlohmann::json>& partials,
                                       const ContextLossRequest& request, const std::string& name) {
  ContextLossTable table;
  table.models = {name};
  table.contexts = request.contexts;
  table.seed = request.seed;
  table.targets = common_field(partials, "targets", "recl").get<std::vector<int64_t>>();
  const auto losses = gather_pieces(
      partials, std::vector<int64_t>(request.contexts.size(), request.targets), "recl");
  table.losses.assign(1, {});
  for (const auto& row : losses) {
    table.losses[0].emplace_back();
    for (const auto& loss : row) table.losses[0].back().push_back(loss.get<double>());
  }
  check_loss_table(table);
  return table;
}

ContextLossTable measure_context_losses(TransformerLM& model, const std::vector<int32_t>& ids,
                                        const ContextLossRequest& request,
                                        const std::string& name) {
  return finish_context_losses({score_context_losses_shard(model, ids, request, {})}, request,
                               name);
}

}  // namespace txl
