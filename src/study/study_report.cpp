#include "txl/study/study_report.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "txl/eval/cache.h"
#include "txl/eval/plot.h"
#include "txl/eval/report.h"
#include "txl/run/run_dir.h"
#include "txl/study/group_table.h"
#include "txl/study/study_bits_per_byte.h"
#include "txl/study/study_plots.h"
#include "txl/study/study_probes.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"
#include "txl/util/version.h"

namespace txl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string slug(const std::string& label) {
  std::string s;
  for (const char c : label) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return s;
}

std::string ppl_plot(const StudyProtocol& p) { return "plots/ppl-" + slug(p.label); }
std::string position_plot(const StudyProtocol& p) { return "plots/positions-" + slug(p.label); }
const char* const kValidationPlot = "plots/validation";
const char* const kLossPlot = "plots/train-loss";

// "5.37 [5.31, 5.43]"; "5.37" without an interval.
std::string format_estimate(const Estimate& e, int digits = 2) {
  if (!e.has_interval) return fmt::format("{:.{}f}", e.value, digits);
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", e.value, digits, e.lo, digits, e.hi, digits);
}

std::string ratio_cell(const Estimate& e) {
  return format_estimate(e, 3) + (e.basis == "windows" ? " (w)" : "");
}

// What every section of report.md reads.
struct ReportContext {
  const StudySpec& spec;
  const std::vector<CellResults>& cells;
  const StudyStats& stats;
  const StudyReportInfo& info;
  const std::vector<std::string>& drawn;
  const std::vector<int64_t>& lengths;

  // An image link only for a plot that was drawn (a stale or missing file would mislead).
  std::string image(const std::string& alt, const std::string& plot) const {
    if (std::find(drawn.begin(), drawn.end(), plot) == drawn.end())
      return fmt::format("({}: not drawn, see below)\n\n", alt);
    return fmt::format("![{}]({}.png)\n\n", alt, plot);
  }
};

std::string what_was_run(const ReportContext& c) {
  const auto& [spec, cells, stats, info, drawn, lengths] = c;
  std::string md;
  md += "## What was run\n\n";
  md += fmt::format(
      "- Study config: `{}`; base config {}, resolved in `results.json` (`study.base`).\n",
      info.config_path, spec.base_path.empty() ? "inline" : "`" + spec.base_path + "`");
  md += "- Grid:\n";
  for (const auto& axis : spec.grid) {
    std::vector<std::string> values;
    for (const auto& v : axis.values)
      values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    md += fmt::format("  - `{}`: {}\n", axis.key, join(values));
  }
  md += fmt::format(
      "- Evaluation: {}; lengths {}; checkpoint {}{}.\n", join(protocol_labels(spec)),
      [&] {
        std::vector<std::string> l;
        for (const auto x : lengths) l.push_back(std::to_string(x));
        return join(l);
      }(),
      spec.eval.checkpoint,
      spec.eval.max_tokens > 0 ? fmt::format("; first {} tokens", spec.eval.max_tokens) : "");
  // A length past the split (or eval.max_tokens) scores shorter windows than its label: every
  // cell scores the same windows, so the first result at that length says it for all.
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::string note;
    for (const auto& cell : cells) {
      for (const auto& protocol : cell.results) {
        if (note.empty() && i < protocol.size() && protocol[i])
          note = short_window_note(*protocol[i]);
      }
    }
    if (!note.empty()) md += "- Note: " + note + ".\n";
  }
  md += fmt::format(
      "- Reproduce: `txl study --config {} --out {}`; one cell: `txl study --config {} --out {} "
      "--cell NAME`, then `--report`.\n",
      info.config_path, info.out_dir, info.config_path, info.out_dir);
  md += tokens_summary(stats);
  md += fmt::format("- Machine: {}; txl {}.\n", info.machine, txl_version());
  if (info.wall_seconds > 0)
    md += fmt::format("- Wall time of the invocation that wrote this report: {}.\n",
                      format_duration(info.wall_seconds));
  md += "\n";

  return md;
}

const char* const kPerplexityLegend =
    "Cells: perplexity with its 95% interval over seeds (Student t; `(w)`: one seed, window "
    "bootstrap). **bold** row: the training length. ▲ significantly worse, ▼ significantly "
    "better than the baseline (the seed-level interval of the paired difference excludes 0).\n\n";

// The perplexity table of protocol p, with its plot (and bits per byte when tokens differ).
std::string perplexity_section(const ReportContext& c, size_t p) {
  const auto& [spec, cells, stats, info, drawn, lengths] = c;
  const auto& label = spec.protocols[p].label;
  std::string md;
  md += fmt::format("## Perplexity: {}\n\n", label);
  std::vector<std::string> reasons;
  md += group_table(
      lengths, all_groups(stats),
      [&](const GroupStats& g) {
        return g.name + (g.encoding == stats.baseline ? " (baseline)" : "");
      },
      [&](const GroupStats& g, size_t li) -> std::string {
        const auto& row = g.rows[p][li];
        if (!row.unavailable.empty()) {
          const std::string why = g.name + ": " + row.unavailable;
          if (std::find(reasons.begin(), reasons.end(), why) == reasons.end())
            reasons.push_back(why);
          return "n/a";
        }
        std::string cell = format_estimate(row.ppl);
        if (row.ppl.basis == "windows") cell += " (w)";
        if (row.significant) cell += row.nll_diff.value > 0 ? " ▲" : " ▼";
        return cell;
      },
      [&](size_t li) {
        const bool trained =
            std::any_of(stats.groups.begin(), stats.groups.end(),
                        [&](const GroupStats& g) { return g.train_length == lengths[li]; });
        return trained ? fmt::format("**{}**", lengths[li]) : std::to_string(lengths[li]);
      });
  md += "\n" + std::string(kPerplexityLegend);
  if (!reasons.empty()) md += "n/a: " + join(reasons, "; ") + ".\n\n";
  md += c.image("perplexity against length, " + label, ppl_plot(spec.protocols[p]));
  if (tokens_differ(stats)) md += bits_per_byte_table(spec, stats, p);

  return md;
}

std::string baseline_ratio_section(const ReportContext& c, size_t p) {
  const auto& [spec, cells, stats, info, drawn, lengths] = c;
  const auto& label = spec.protocols[p].label;
  std::string md;
  md += fmt::format("### {}: perplexity ratio to the baseline ({})\n\n", label, stats.baseline);
  md +=
      "exp(mean over seeds of the paired NLL difference) with its 95% interval; < 1: better than "
      "the baseline.\n\n";
  std::vector<const GroupStats*> compared;
  for (const auto& g : stats.groups)
    if (g.encoding != stats.baseline) compared.push_back(&g);
  md += group_table(
      lengths, compared, [](const GroupStats& g) { return g.name; },
      [&](const GroupStats& g, size_t li) -> std::string {
        const auto& row = g.rows[p][li];
        if (!row.has_vs_baseline) return "n/a";
        return ratio_cell(row.ppl_ratio) + (row.significant ? " *" : "");
      });
  md +=
      "\n`*`: significant at the seed level. `(w)`: one common seed, window bootstrap (never "
      "called significant). Each group is compared with the baseline encoding at the same "
      "values of the other grid keys. n/a: the group or its baseline has no value at that "
      "length, or they share no seed.\n\n";

  return md;
}

std::string extrapolation_section(const ReportContext& c, size_t p) {
  const auto& [spec, cells, stats, info, drawn, lengths] = c;
  const auto& label = spec.protocols[p].label;
  std::string md;
  md += fmt::format(
      "### {}: extrapolation, perplexity at L over perplexity at the training length\n\n", label);
  md += group_table(
      lengths, all_groups(stats), [](const GroupStats& g) { return g.name; },
      [&](const GroupStats& g, size_t li) {
        const auto& row = g.rows[p][li];
        return row.has_vs_train ? format_estimate(row.train_ratio, 3) : std::string("n/a");
      });
  md += "\n";
  md += fmt::format("### {}: loss by position at L = {}\n\n", label, lengths.back());
  md += c.image("loss by position, " + label, position_plot(spec.protocols[p]));
  return md;
}

std::string training_section(const ReportContext& c) {
  const auto& [spec, cells, stats, info, drawn, lengths] = c;
  std::string md;
  md +=
      "## Training\n\n| cell | steps | train time | eval time | last valid ppl "
      "|\n|---|---|---|---|---|\n";
  StudyPaths paths{info.out_dir};
  for (const auto& c : cells) {
    md += fmt::format("| {} | {} | {} | {} | {:.3f} |\n", c.name, c.steps,
                      format_duration(c.train_seconds), format_duration(c.eval_seconds),
                      last_valid_ppl(paths, c.name));
  }
  md +=
      "\nTimes are wall clock on the machine above; a cell resumed after an interruption counts "
      "only the training that finished in a txl process that exited cleanly.\n\n";
  md += c.image("validation perplexity during training", kValidationPlot);
  md += c.image("training loss", kLossPlot);
  return md;
}

}  // namespace

std::string study_report_markdown(const StudySpec& spec, const std::vector<CellResults>& cells,
                                  const StudyStats& stats, const StudyReportInfo& info,
                                  const std::vector<std::string>& drawn,
                                  const std::vector<std::string>& plot_notes) {
  const ReportContext c{spec, cells, stats, info, drawn, spec.eval.lengths};
  std::string md;
  md += fmt::format("# txl study: {} ({} split)\n\n", study_corpus_name(spec), spec.eval.split);
  md += fmt::format("{} of {} cells finished; groups: {}; baseline: **{}**.\n\n", cells.size(),
                    spec.cells.size(), join(spec.groups), stats.baseline);
  if (!stats.missing_cells.empty())
    md +=
        fmt::format("Not finished yet (not in the statistics): {}.\n\n", join(stats.missing_cells));
  md += what_was_run(c);
  for (size_t p = 0; p < spec.protocols.size(); ++p) {
    md += perplexity_section(c, p);
    md += baseline_ratio_section(c, p);
    md += extrapolation_section(c, p);
  }
  md += probes_markdown(
      study_probe_stats(spec, cells),
      [&](const std::string& alt, const std::string& plot) { return c.image(alt, plot); });
  md += training_section(c);
  md += "## Statistics\n\n" + std::string(kStatisticsMethod) + "\n";
  if (!plot_notes.empty()) md += "\n## Plots not drawn\n\n" + join(plot_notes, "\n") + "\n";
  return md;
}

std::vector<std::string> write_study_report(const StudySpec& spec, const StudyPaths& paths,
                                            const std::vector<CellResults>& cells,
                                            const StudyStats& stats, const StudyReportInfo& info) {
  std::vector<std::string> written;
  auto results = study_results_json(spec, cells, stats, info);
  const StudyProbes probes = study_probe_stats(spec, cells);
  if (!probes.sections.empty()) results["probes"] = to_json(probes);
  write_file_atomic(paths.results(), results.dump(2) + "\n");
  written.push_back(paths.results());

  std::vector<std::pair<std::string, PlotSpec>> plots;
  for (size_t p = 0; p < spec.protocols.size(); ++p) {
    plots.emplace_back(ppl_plot(spec.protocols[p]), ppl_plot_spec(spec, stats, p));
    plots.emplace_back(position_plot(spec.protocols[p]), position_plot_spec(spec, stats, p));
  }
  for (auto& plot : probe_line_plots(probes)) plots.push_back(std::move(plot));
  plots.emplace_back(kValidationPlot, training_plot_spec(spec, paths, cells, true));
  plots.emplace_back(kLossPlot, training_plot_spec(spec, paths, cells, false));
  fs::create_directories(paths.plots());
  std::vector<std::string> notes, drawn;
  for (const auto& [name, plot] : plots) {
    if (plot.series.empty()) {
      notes.push_back(
          fmt::format("- {}.png: no data to draw (every group n/a, or no metrics)", name));
      continue;
    }
    const std::string png = paths.dir + "/" + name + ".png", svg = paths.dir + "/" + name + ".svg";
    try {
      write_plot(plot, png, svg);
      written.push_back(png);
      drawn.push_back(name);
    } catch (const std::exception& e) {
      notes.push_back(fmt::format("- {}.png: {}", name, e.what()));
    }
  }
  for (const auto& [name, heatmap] : probe_heatmaps(probes)) {
    try {
      write_heatmap(heatmap, paths.dir + "/" + name + ".png", paths.dir + "/" + name + ".svg");
      written.push_back(paths.dir + "/" + name + ".png");
      drawn.push_back(name);
    } catch (const std::exception& e) {
      notes.push_back(fmt::format("- {}.png: {}", name, e.what()));
    }
  }
  write_file_atomic(paths.report(), study_report_markdown(spec, cells, stats, info, drawn, notes));
  written.push_back(paths.report());
  return written;
}

}  // namespace txl
