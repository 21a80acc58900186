// The RECL probe on the registry (recl_search.h holds the definition, context_losses.h the
// measurement): each run measures its loss table l(c, t); RECL exists over a group of
// models (the runs of a compare, a study's groups at one seed) and is computed from the
// members' tables.
#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "txl/probe/context_losses.h"
#include "txl/probe/probe.h"
#include "txl/probe/recl_search.h"
#include "txl/util/error.h"

namespace txl {

namespace {

ProbeValues recl_defaults(const ProbeSubject& subject) {
  const int64_t step = std::max<int64_t>(1, subject.config->train.tgt_len / 2);
  ProbeValues v;
  v.values["first"] = {double(step)};
  v.values["step"] = {double(step)};
  v.values["last"] = {double(std::max(step, longest_length(subject)))};
  v.values["targets"] = {200};
  v.values["ratios"] = {0.1, 0.5, 1.0};
  v.values["threshold"] = {0.01};
  return v;
}

// The request as the values give it; scoring settings come from the subject (recl_score).
ContextLossRequest loss_request(const ProbeValues& v) {
  ContextLossRequest r;
  r.contexts = context_grid(v.integer("first"), v.integer("step"), v.integer("last"));
  r.targets = v.integer("targets");
  r.seed = v.seed;
  return r;
}

void recl_check(const ProbeSubject& subject, const ProbeValues& v) {
  if (v.integer("first") > v.integer("last")) {
    throw InputError(fmt::format("recl.first ({}) must be <= recl.last ({})", v.integer("first"),
                                 v.integer("last")));
  }
  const auto r = loss_request(v);
  check_window_fits(subject, r.contexts.back(), "recl.last");
  if (r.contexts.back() >= static_cast<int64_t>(subject.ids->size())) {
    throw InputError(fmt::format("recl.last {} leaves no target in the split ({} tokens)",
                                 r.contexts.back(), subject.ids->size()));
  }
}

ProbeWorkload recl_workload(const ProbeSubject& /*subject*/, const ProbeValues& v) {
  // One context length at a time: a window of c + 1 tokens per target; the loss table of
  // every context x target is kept.
  if (v.integer("first") > v.integer("last")) return {};  // recl_check refuses it
  const auto r = loss_request(v);
  ProbeWorkload w;
  w.window = r.contexts.back() + 1;
  w.windows = r.targets;
  for (const int64_t c : r.contexts) w.tokens += double(r.targets) * double(c + 1);
  w.instance_bytes = double(r.targets) * (double(w.window) * double(sizeof(int32_t)) +
                                          double(r.contexts.size()) * double(sizeof(double)));
  return w;
}

nlohmann::json table_json(const ContextLossTable& t) {
  return {{"contexts", t.contexts},
          {"targets", t.targets},
          {"seed", t.seed},
          {"losses", t.losses.at(0)},
          {"mean_loss", mean_losses(t).at(0)}};
}

ContextLossTable table_from_json(const nlohmann::json& j, const std::string& name) {
  ContextLossTable t;
  t.models = {name};
  t.contexts = j.at("contexts").get<std::vector<int64_t>>();
  t.targets = j.at("targets").get<std::vector<int64_t>>();
  t.seed = j.at("seed").get<uint64_t>();
  t.losses = {j.at("losses").get<std::vector<std::vector<double>>>()};
  return t;
}

nlohmann::json recl_score(const ProbeSubject& subject, const ProbeValues& v,
                          const ProbeShard& shard, const ProbeProgressFn& progress) {
  const auto request = scored_on(loss_request(v), subject, progress);
  return score_context_losses_shard(*subject.model, *subject.ids, request, shard);
}

ProbeRun recl_finish(const std::vector<nlohmann::json>& partials, const ProbeValues& v) {
  const auto table = finish_context_losses(partials, loss_request(v), "run");
  ProbeRun out;
  out.detail = table_json(table);
  const auto means = mean_losses(table).at(0);
  for (size_t k = 0; k < table.contexts.size(); ++k)
    out.metrics.push_back({"mean NLL with exactly c tokens of context (nats)", "c",
                           double(table.contexts[k]), means[k]});
  return out;
}

// Every member's RECL at each ratio and its relative gain at each step (Figure 3).
std::vector<std::vector<ProbeMetric>> recl_group(const std::vector<nlohmann::json>& details,
                                                 const ProbeValues& v) {
  std::vector<ContextLossTable> tables;
  for (size_t i = 0; i < details.size(); ++i)
    tables.push_back(table_from_json(details[i], "member " + std::to_string(i + 1)));
  ReclOptions options;
  options.ratios = v.numbers("ratios");
  options.threshold = v.number("threshold");
  const ReclResult r = compute_recl(group_loss_tables(tables), options);
  std::vector<std::vector<ProbeMetric>> out(details.size());
  for (size_t i = 0; i < details.size(); ++i) {
    for (const auto& curve : r.curves)
      out[i].push_back({"RECL (tokens)", "r", curve.ratio, double(curve.recl[i])});
    // Beside the paper's number, the search that does not count gain from flattening, and how
    // many steps were marked (recl_search.h).
    for (const auto& curve : r.curves)
      out[i].push_back({"RECL without gain from flattening (tokens)", "r", curve.ratio,
                        double(curve.recl_without_flattening[i])});
    for (const auto& curve : r.curves) {
      double marked = 0;
      for (const auto& step : curve.steps) marked += step.flattening[i] ? 1 : 0;
      out[i].push_back({"steps marked gain from flattening", "r", curve.ratio, marked});
    }
    for (const auto& curve : r.curves) {
      for (const auto& step : curve.steps) {
        ProbeMetric m{fmt::format("relative gain from c to c + step, r = {:g}", curve.ratio), "c",
                      double(step.from), step.relative_gain[i]};
        m.in_table = false;  // Figure 3's curve: drawn, and in the JSON
        out[i].push_back(m);
        ProbeMetric rise{
            fmt::format("own mean loss rise from c to c + step (nats), r = {:g}", curve.ratio), "c",
            double(step.from), step.own_to[i] - step.own_from[i]};
        rise.in_table = false;
        out[i].push_back(rise);
      }
    }
  }
  return out;
}

}  // namespace

Probe recl_probe() {
  Probe p;
  p.name = "recl";
  p.description =
      "RECL (Transformer-XL's relative effective context length) over the group of runs "
      "compared: how far back more context still lowers the loss on the hardest top-r targets "
      "by 1%, relative to the group's best model";
  p.cost = "targets x sum over the grid of c tokens forwarded (each (c, t) its own window)";
  p.options = {
      {"first", 1, 1 << 24, true, false, "c_0, first context length (default T/2)"},
      {"step", 1, 1 << 24, true, false, "Delta, grid step (default T/2)"},
      {"last", 1, 1 << 24, true, false,
       "largest context (default: the longest evaluated length not n/a)"},
      {"targets", 1, 1 << 20, true, false, "target positions sampled from the split (default 200)"},
      {"ratios", 1e-6, 1, false, true, "r, fraction of hardest targets (default 0.1,0.5,1)"},
      {"threshold", 0, 1, false, false, "relative gain that continues the search (default 0.01)"}};
  p.defaults = recl_defaults;
  p.check = recl_check;
  p.workload = recl_workload;
  p.score = recl_score;
  p.finish = recl_finish;
  p.group = recl_group;
  return p;
}

}  // namespace txl
