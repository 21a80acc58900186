#include "txl/probe/run_probes.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "txl/probe/probe_scoring.h"
#include "txl/util/text.h"

namespace txl {

std::vector<PlannedProbe> plan_probes(const ProbeRequest& request, const ProbeSubject& subject,
                                      const std::string& where) {
  std::vector<PlannedProbe> planned;
  for (const auto& name : request.names) {
    const Probe& probe = find_probe(name, where);
    auto values = resolve_probe_values(probe, request, subject, where);
    const ProbeWorkload w = probe.workload(subject, values);
    planned.push_back({&probe, std::move(values), w.tokens, w.window});
  }
  return planned;
}

namespace {

// Tokens per second of one forward pass as a probe makes them: as many windows of `window`
// tokens (of the split, at most the split) as eval.batch_tokens puts in a pass, timed. What
// the estimate before a probe divides its tokens by.
double forward_rate(const ProbeSubject& subject, int64_t window) {
  const auto& ids = *subject.ids;
  window = std::min<int64_t>(window, static_cast<int64_t>(ids.size()));
  if (window < 2) return 0.0;  // no window to time: no estimate
  ProbeScoreOptions options;
  options.batch_tokens = subject.config->eval.batch_tokens;
  options.precision = subject.precision;
  const int64_t per_pass = std::max<int64_t>(1, options.batch_tokens / (window - 1));
  const std::vector<std::vector<int32_t>> pass(
      static_cast<size_t>(per_pass), std::vector<int32_t>(ids.begin(), ids.begin() + window));
  const auto start = std::chrono::steady_clock::now();
  score_windows(*subject.model, pass, 1, options);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s > 0 ? static_cast<double>(per_pass * window) / s : 0.0;
}

}  // namespace

std::vector<ProbePartial> score_probes(const std::vector<PlannedProbe>& planned,
                                       const ProbeSubject& subject, const std::string& label,
                                       const ProbeShard& shard) {
  std::vector<ProbePartial> partials;
  for (const auto& p : planned) {
    const auto start = std::chrono::steady_clock::now();
    double last_shown = -1.0;
    bool finished = false;  // 100% shown once, however many parts report it
    const auto progress = [&](double fraction) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s - last_shown < 2.0 && fraction < 1.0) return;
      if (fraction >= 1.0 && std::exchange(finished, true)) return;
      last_shown = s;
      const double left = fraction > 0 ? s / fraction - s : 0.0;
      fmt::print(stderr, "  {}probe {}: {:5.1f}%  {} elapsed, ~{} left\n", label, p.probe->name,
                 100.0 * fraction, format_duration(s), format_duration(left));
    };
    const double rate = forward_rate(subject, p.window);
    fmt::print(stderr, "  {}probe {}: {:.3g} tokens to forward{} ({}){}\n", label, p.probe->name,
               p.tokens, shard.count > 1 ? " by all the shards together" : "", p.probe->cost,
               rate > 0
                   ? fmt::format(", about {} at {:.0f} tok/s (one pass of {}-token windows timed)",
                                 format_duration(p.tokens / rate), rate, p.window)
                   : std::string());
    ProbePartial out;
    out.name = p.probe->name;
    out.values = p.values;
    out.partial = p.probe->score(subject, p.values, shard, progress);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "  {}probe {}: done in {}\n", label, out.name, format_duration(out.seconds));
    partials.push_back(std::move(out));
  }
  return partials;
}

ProbeOutput finish_probe(const std::string& name, const ProbeValues& values,
                         const std::vector<nlohmann::json>& partials, double seconds) {
  const Probe& probe = find_probe(name, "probe");
  ProbeOutput out;
  out.name = probe.name;
  out.values = values;
  out.run = probe.finish(partials, values);
  if (probe.group) {
    // One run alone is a group of one: its group metrics beside its own (compare and
    // study compute them over their groups instead).
    auto alone = group_metrics(probe, {&out});  // kept: the loop reads into it
    for (auto& m : alone.at(0)) {
      m.series += " [this run alone]";
      out.run.metrics.push_back(m);
    }
  }
  out.seconds = seconds;
  return out;
}

std::vector<ProbeOutput> run_probes(const std::vector<PlannedProbe>& planned,
                                    const ProbeSubject& subject, const std::string& label) {
  std::vector<ProbeOutput> outputs;
  for (auto& p : score_probes(planned, subject, label, ProbeShard{}))
    outputs.push_back(finish_probe(p.name, p.values, {std::move(p.partial)}, p.seconds));
  return outputs;
}

nlohmann::json probes_to_json(const std::vector<ProbeOutput>& outputs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& o : outputs) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : o.run.metrics) metrics.push_back(to_json(m));
    j[o.name] = {{"options", to_json(o.values)},
                 {"seconds", o.seconds},
                 {"metrics", metrics},
                 {"detail", o.run.detail}};
  }
  return j;
}

std::string format_probe_outputs(const std::vector<ProbeOutput>& outputs) {
  std::string out;
  for (const auto& o : outputs) {
    out += fmt::format("probe {} ({}; seed {}; {}):\n", o.name,
                       find_probe(o.name, "probe").description, o.values.seed,
                       format_duration(o.seconds));
    out += format_probe_metrics(o.name, o.run.metrics);
  }
  return out;
}

std::vector<std::vector<ProbeMetric>> group_metrics(
    const Probe& probe, const std::vector<const ProbeOutput*>& members) {
  if (!probe.group || members.empty()) return {};
  std::vector<nlohmann::json> details;
  for (const auto* m : members) details.push_back(m->run.detail);
  return probe.group(details, members.front()->values);
}

ProbeComparison compare_probe_outputs(const std::vector<std::string>& run_names,
                                      const std::vector<std::vector<ProbeOutput>>& outputs) {
  ProbeComparison c;
  c.runs = run_names;
  if (outputs.empty()) return c;
  for (size_t p = 0; p < outputs.front().size(); ++p) {
    const Probe& probe = find_probe(outputs.front()[p].name, "probe");
    c.probes.push_back(probe.name);
    std::vector<const ProbeOutput*> members;
    for (const auto& run : outputs) members.push_back(&run.at(p));
    std::vector<std::vector<ProbeMetric>> per_run;
    if (probe.group) {
      per_run = group_metrics(probe, members);
    } else {
      for (const auto* m : members) per_run.push_back(m->run.metrics);
    }
    c.metrics.push_back(std::move(per_run));
  }
  return c;
}

namespace {

// The (series, x) rows of one probe over every run, in the first run's order.
std::vector<std::pair<std::string, double>> metric_rows(
    const std::vector<std::vector<ProbeMetric>>& per_run) {
  std::vector<std::pair<std::string, double>> rows;
  for (const auto& run : per_run) {
    for (const auto& m : run) {
      if (!m.in_table) continue;  // curves and grids: drawn, and in the JSON
      const std::pair<std::string, double> key{m.series, m.x};
      if (std::find(rows.begin(), rows.end(), key) == rows.end()) rows.push_back(key);
    }
  }
  return rows;
}

const ProbeMetric* find_metric(const std::vector<ProbeMetric>& run, const std::string& series,
                               double x) {
  for (const auto& m : run) {
    if (m.series == series && m.x == x) return &m;
  }
  return nullptr;
}

}  // namespace

std::string format_probe_comparison(const ProbeComparison& c) {
  std::string out;
  for (size_t p = 0; p < c.probes.size(); ++p) {
    out += fmt::format("probe {}:\n{:<40}", c.probes[p], "");
    for (const auto& run : c.runs) out += fmt::format(" {:>14.14}", run);
    out += "\n";
    std::string series;
    for (const auto& [s, x] : metric_rows(c.metrics[p])) {
      if (s != series) out += fmt::format("  {}\n", series = s);
      const ProbeMetric* first = nullptr;
      std::string cells;
      for (const auto& run : c.metrics[p]) {
        const ProbeMetric* m = find_metric(run, s, x);
        if (!first) first = m;
        cells += m ? fmt::format(" {:>14.4f}", m->value) : fmt::format(" {:>14}", "n/a");
      }
      out += fmt::format("    {:<36}{}\n", first ? fmt::format("{} = {:g}", first->x_name, x) : "",
                         cells);
    }
  }
  return out;
}

nlohmann::json to_json(const ProbeComparison& c) {
  nlohmann::json probes = nlohmann::json::object();
  for (size_t p = 0; p < c.probes.size(); ++p) {
    nlohmann::json runs = nlohmann::json::array();
    for (size_t r = 0; r < c.metrics[p].size(); ++r) {
      nlohmann::json metrics = nlohmann::json::array();
      for (const auto& m : c.metrics[p][r]) metrics.push_back(to_json(m));
      runs.push_back({{"run", r < c.runs.size() ? c.runs[r] : ""}, {"metrics", metrics}});
    }
    probes[c.probes[p]] = runs;
  }
  return probes;
}

}  // namespace txl
