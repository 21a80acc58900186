#include "txl/study/study_probes.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "txl/probe/probe.h"
#include "txl/study/statistics.h"
#include "txl/util/text.h"

namespace txl {

namespace {

using nlohmann::json;

// The metrics of every cell for one probe, in cell order (empty where a cell has none).
std::vector<std::vector<ProbeMetric>> cell_metrics(const std::string& probe,
                                                   const std::vector<CellResults>& cells) {
  std::vector<std::vector<ProbeMetric>> out(cells.size());
  for (size_t c = 0; c < cells.size(); ++c) {
    if (!cells[c].probes.contains(probe)) continue;
    for (const auto& m : cells[c].probes[probe].at("metrics"))
      out[c].push_back(metric_from_json(m));
  }
  return out;
}

// A group probe: per (variant, seed), the cells at that seed form the model group.
std::vector<std::vector<ProbeMetric>> group_probe_metrics(const Probe& probe, const StudySpec& spec,
                                                          const std::vector<CellResults>& cells) {
  std::vector<std::vector<ProbeMetric>> out(cells.size());
  std::map<std::pair<std::string, int64_t>, std::vector<size_t>> members;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (!cells[c].probes.contains(probe.name)) continue;
    const auto it = std::find_if(spec.cells.begin(), spec.cells.end(),
                                 [&](const StudyCell& s) { return s.name == cells[c].name; });
    const std::string variant = it == spec.cells.end() ? "" : it->variant;
    members[{variant, cells[c].seed}].push_back(c);
  }
  for (const auto& [key, indices] : members) {
    std::vector<json> details;
    for (const size_t c : indices) details.push_back(cells[c].probes[probe.name].at("detail"));
    const ProbeValues values =
        probe_values_from_json(cells[indices.front()].probes[probe.name].at("options"));
    const auto metrics = probe.group(details, values);
    for (size_t i = 0; i < indices.size() && i < metrics.size(); ++i) out[indices[i]] = metrics[i];
  }
  return out;
}

ProbeMetricRow& row_for(std::vector<ProbeMetricRow>& rows, const ProbeMetric& m, size_t groups) {
  for (auto& r : rows) {
    if (r.series == m.series && r.x == m.x) return r;
  }
  rows.push_back({m.series, m.x_name, m.x, m.grid, m.y_name, m.grid_y, m.in_table, {}});
  rows.back().groups.resize(groups);
  return rows.back();
}

StudyProbeSection probe_section(const Probe& probe, const StudySpec& spec,
                                const std::vector<CellResults>& cells) {
  StudyProbeSection section;
  section.probe = probe.name;
  section.description = probe.description;
  auto per_cell = cell_metrics(probe.name, cells);
  if (probe.group) {
    // The group's numbers (RECL over the study's groups at each seed), then the cell's own
    // (its loss curve); its group-of-one numbers make no sense beside the study's group.
    auto grouped = group_probe_metrics(probe, spec, cells);
    for (size_t c = 0; c < per_cell.size(); ++c) {
      for (const auto& m : per_cell[c]) {
        if (m.series.find("[this run alone]") == std::string::npos) grouped[c].push_back(m);
      }
    }
    per_cell = std::move(grouped);
  }
  // values[row][group]: one number per seed.
  std::vector<std::vector<std::vector<double>>> values;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (section.options.is_null() && cells[c].probes.contains(probe.name))
      section.options = cells[c].probes[probe.name].at("options");
    const auto g = std::find(spec.groups.begin(), spec.groups.end(), cells[c].group);
    if (g == spec.groups.end()) continue;
    const size_t gi = static_cast<size_t>(g - spec.groups.begin());
    for (const auto& m : per_cell[c]) {
      ProbeMetricRow& row = row_for(section.rows, m, spec.groups.size());
      const size_t ri = static_cast<size_t>(&row - section.rows.data());
      if (values.size() <= ri)
        values.resize(ri + 1, std::vector<std::vector<double>>(spec.groups.size()));
      values[ri][gi].push_back(m.value);
    }
  }
  for (size_t r = 0; r < section.rows.size(); ++r) {
    for (size_t g = 0; g < spec.groups.size(); ++g) {
      const auto& v = values[r][g];
      if (v.empty()) continue;
      const SeedInterval si = seed_interval(v);
      section.rows[r].groups[g] = {static_cast<int64_t>(v.size()), si.mean, si.valid, si.lo, si.hi};
    }
  }
  return section;
}

std::string slug(const std::string& text) {
  std::string s;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s;
}

std::string format_group_estimate(const ProbeGroupEstimate& e) {
  if (e.seeds == 0) return "n/a";
  if (!e.has_interval) return fmt::format("{:.3f}", e.mean);
  return fmt::format("{:.3f} [{:.3f}, {:.3f}]", e.mean, e.lo, e.hi);
}

bool whole(double x) { return std::isfinite(x) && x == std::floor(x); }

// Whether sorted positive values grow by a factor of at least 1.5 at every step.
bool geometric(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.size() < 2 || xs.front() <= 0) return false;
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i] < 1.5 * xs[i - 1]) return false;
  }
  return true;
}

}  // namespace

StudyProbes study_probe_stats(const StudySpec& spec, const std::vector<CellResults>& cells) {
  StudyProbes out;
  out.groups = spec.groups;
  for (const auto& c : cells) {
    if (std::find(out.train_lengths.begin(), out.train_lengths.end(), c.train_length) ==
        out.train_lengths.end())
      out.train_lengths.push_back(c.train_length);
  }
  for (const auto& name : spec.eval.probes.names)
    out.sections.push_back(probe_section(find_probe(name, "eval.probes"), spec, cells));
  return out;
}

json to_json(const StudyProbes& probes) {
  json sections = json::array();
  for (const auto& s : probes.sections) {
    json rows = json::array();
    for (const auto& r : s.rows) {
      json groups = json::object();
      for (size_t g = 0; g < r.groups.size(); ++g) {
        const auto& e = r.groups[g];
        if (e.seeds == 0) continue;
        groups[probes.groups[g]] = {{"seeds", e.seeds},
                                    {"mean", e.mean},
                                    {"lo", e.has_interval ? json(e.lo) : json()},
                                    {"hi", e.has_interval ? json(e.hi) : json()}};
      }
      json row = {{"series", r.series}, {"x_name", r.x_name}, {"x", r.x}, {"groups", groups}};
      if (!r.grid.empty()) row["grid"] = {{"name", r.grid}, {"y_name", r.y_name}, {"y", r.grid_y}};
      rows.push_back(row);
    }
    sections.push_back({{"probe", s.probe},
                        {"description", s.description},
                        {"options", s.options},
                        {"rows", rows}});
  }
  return {{"groups", probes.groups},
          {"interval", "mean over seeds, 95% Student t interval over seeds (>= 2 seeds)"},
          {"probes", sections}};
}

std::vector<std::pair<std::string, PlotSpec>> probe_line_plots(const StudyProbes& probes) {
  std::vector<std::pair<std::string, PlotSpec>> out;
  for (const auto& s : probes.sections) {
    // Curves over whole-number x (lengths, distances, contexts); a table of a few ratios
    // (RECL at r = 0.1, 0.5, 1) stays a table.
    std::vector<std::string> series, fractional;
    for (const auto& r : s.rows) {
      if (!whole(r.x)) fractional.push_back(r.series);
    }
    for (const auto& r : s.rows) {
      if (r.grid.empty() &&
          std::find(fractional.begin(), fractional.end(), r.series) == fractional.end() &&
          std::find(series.begin(), series.end(), r.series) == series.end())
        series.push_back(r.series);
    }
    for (const auto& name : series) {
      PlotSpec spec;
      spec.title = fmt::format("probe {}: {}", s.probe, name);
      spec.ylabel = name;
      spec.bands = true;
      spec.key_title = "bands: 95% interval over seeds";
      // Lengths, distances and contexts: the training length marked. A grid with even steps
      // (RECL's c) reads better on a linear axis than crowded on a log one.
      std::vector<double> xs;
      for (const auto& r : s.rows) {
        if (r.series == name) xs.push_back(r.x);
      }
      spec.log_x = geometric(xs);
      spec.marks = probes.train_lengths;
      spec.mark_label = "trained at {}";
      for (size_t g = 0; g < probes.groups.size(); ++g) {
        PlotSeries line;
        line.label = probes.groups[g];
        for (const auto& r : s.rows) {
          if (r.series != name || r.groups[g].seeds == 0) continue;
          spec.xlabel = r.x_name + (spec.log_x ? " (log2 scale)" : "");
          const auto& e = r.groups[g];
          line.x.push_back(static_cast<int64_t>(r.x));
          line.y.push_back(e.mean);
          line.lo.push_back(e.has_interval ? e.lo : e.mean);
          line.hi.push_back(e.has_interval ? e.hi : e.mean);
        }
        if (!line.x.empty()) spec.series.push_back(line);
      }
      out.emplace_back("plots/probe-" + s.probe + "-" + slug(name), spec);
    }
  }
  return out;
}

std::vector<std::pair<std::string, HeatmapSpec>> probe_heatmaps(const StudyProbes& probes) {
  std::vector<std::pair<std::string, HeatmapSpec>> out;
  for (const auto& s : probes.sections) {
    std::vector<std::string> grids;
    for (const auto& r : s.rows) {
      if (!r.grid.empty() && std::find(grids.begin(), grids.end(), r.grid) == grids.end())
        grids.push_back(r.grid);
    }
    for (const auto& grid : grids) {
      std::vector<double> xs, ys;
      for (const auto& r : s.rows) {
        if (r.grid != grid) continue;
        if (std::find(xs.begin(), xs.end(), r.x) == xs.end()) xs.push_back(r.x);
        if (std::find(ys.begin(), ys.end(), r.grid_y) == ys.end()) ys.push_back(r.grid_y);
      }
      std::sort(xs.begin(), xs.end());
      std::sort(ys.begin(), ys.end());
      for (size_t g = 0; g < probes.groups.size(); ++g) {
        HeatmapSpec h;
        h.title =
            fmt::format("probe {}: {}, {} (mean over seeds)", s.probe, grid, probes.groups[g]);
        h.cblabel = grid;
        h.zmin = 1e300;
        h.zmax = -1e300;
        for (const double x : xs) h.x_labels.push_back(fmt::format("{:g}", x));
        for (const double y : ys) h.y_labels.push_back(fmt::format("{:g}", y));
        h.values.assign(ys.size(), std::vector<double>(xs.size(), NAN));
        for (const auto& r : s.rows) {
          if (r.grid != grid || r.groups[g].seeds == 0) continue;
          h.xlabel = r.x_name;
          h.ylabel = r.y_name;
          const size_t xi = std::find(xs.begin(), xs.end(), r.x) - xs.begin();
          const size_t yi = std::find(ys.begin(), ys.end(), r.grid_y) - ys.begin();
          h.values[yi][xi] = r.groups[g].mean;
          h.zmin = std::min(h.zmin, r.groups[g].mean);
          h.zmax = std::max(h.zmax, r.groups[g].mean);
        }
        if (h.zmin > h.zmax) continue;  // no cell of this group has the grid
        if (h.zmax - h.zmin < 1e-9) h.zmax = h.zmin + 1.0;
        out.emplace_back("plots/probe-" + s.probe + "-" + slug(grid) + "-" + slug(probes.groups[g]),
                         h);
      }
    }
  }
  return out;
}

std::string probes_markdown(
    const StudyProbes& probes,
    const std::function<std::string(const std::string&, const std::string&)>& image) {
  if (probes.sections.empty()) return "";
  std::string md = "## Does the model use the context? Probes\n\n";
  md +=
      "Each cell: mean over the seeds of the study's groups, with the 95% t interval over "
      "seeds in brackets (instances drawn from the split with the seed stated below, the "
      "same for every cell). With few seeds the t interval is wide and symmetric, so it can "
      "reach past what the quantity can take (a negative RECL, an accuracy above 1): read such "
      "a bound as \"no limit on that side\", and add seeds to narrow it.\n\n";
  const auto lines = probe_line_plots(probes);
  const auto maps = probe_heatmaps(probes);
  for (const auto& s : probes.sections) {
    md += fmt::format("### {}\n\n{}. Options: `{}`.\n\n", s.probe, s.description, s.options.dump());
    md += "| metric | x |";
    for (const auto& g : probes.groups) md += " " + g + " |";
    md += "\n|---|---|";
    for (size_t g = 0; g < probes.groups.size(); ++g) md += "---|";
    md += "\n";
    for (const auto& r : s.rows) {
      if (!r.in_table) continue;
      md += fmt::format("| {} | {} = {:g} |", r.series, r.x_name, r.x);
      for (const auto& e : r.groups) md += " " + format_group_estimate(e) + " |";
      md += "\n";
    }
    md += "\n";
    for (const auto& [name, spec] : lines) {
      if (name.rfind("plots/probe-" + s.probe + "-", 0) == 0) md += image(spec.title, name);
    }
    for (const auto& [name, spec] : maps) {
      if (name.rfind("plots/probe-" + s.probe + "-", 0) == 0) md += image(spec.title, name);
    }
  }
  return md;
}

}  // namespace txl
