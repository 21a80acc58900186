// Runs' metrics over training as PlotSpecs (metrics_plots.h): loss and validation perplexity
// per run, a probe series per (run, x), and the JSON of what was drawn.
#include "txl/eval/metrics_plots.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "txl/util/error.h"
#include "txl/util/text.h"

namespace txl {

namespace {

namespace fs = std::filesystem;

// The last `count` components of `dir` ("." and trailing slashes left out).
std::string last_components(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = parts.size() - std::min(count, parts.size()); i < parts.size(); ++i)
    out += (out.empty() ? "" : "/") + parts[i];
  return out;
}

std::vector<std::string> components(const std::string& dir) {
  std::vector<std::string> parts;
  for (const auto& part : fs::path(dir).lexically_normal()) {
    const std::string s = part.string();
    if (!s.empty() && s != "." && s != "/") parts.push_back(s);
  }
  if (parts.empty()) parts.push_back(dir);
  return parts;
}

std::string axis_label(MetricsAxis axis) {
  return axis == MetricsAxis::kStep ? "optimizer step" : "tokens seen (training)";
}

// The x of a point logged at `step`.
int64_t x_at(const LabelledMetrics& run, int64_t step, MetricsAxis axis) {
  if (axis == MetricsAxis::kStep) return step;
  const auto tokens = tokens_at(run.metrics, step);
  if (!tokens) {
    throw InputError(run.metrics.path +
                     " has no progress line with \"tokens_seen\", so --x tokens cannot place its "
                     "points; plot it by step (leave out --x tokens)");
  }
  return *tokens;
}

// "copy gain (nats/token)" -> "copy_gain_nats_token": a name for a file.
std::string file_safe(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-';
    if (keep) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "series" : out;
}

std::string x_text(const ProbePoint& p) {
  if (!p.x) return "";
  return fmt::format(", {} = {:g}", p.x_name.empty() ? "x" : p.x_name, *p.x);
}

// One family's lines: a series per (run, x), in the runs' order and then by x.
std::vector<PlotSeries> family_series(const std::vector<LabelledMetrics>& runs,
                                      const std::string& family, MetricsAxis axis) {
  std::vector<PlotSeries> out;
  for (const auto& run : runs) {
    std::map<std::optional<double>, PlotSeries> by_x;
    for (const auto& p : run.metrics.probes) {
      if (p.series != family || !std::isfinite(p.value)) continue;
      PlotSeries& s = by_x[p.x];
      if (s.label.empty()) s.label = run.label + x_text(p);
      s.x.push_back(x_at(run, p.step, axis));
      s.y.push_back(p.value);
    }
    for (auto& [x, s] : by_x) out.push_back(std::move(s));
  }
  return out;
}

std::string probe_of(const std::vector<LabelledMetrics>& runs, const std::string& family) {
  std::set<std::string> probes;
  for (const auto& run : runs) {
    for (const auto& p : run.metrics.probes) {
      if (p.series == family) probes.insert(p.probe);
    }
  }
  return join(std::vector<std::string>(probes.begin(), probes.end()));
}

std::vector<std::string> metrics_files(const std::vector<LabelledMetrics>& runs) {
  std::vector<std::string> files;
  for (const auto& run : runs) files.push_back(run.metrics.path);
  return files;
}

}  // namespace

std::vector<std::string> run_labels(const std::vector<std::string>& dirs) {
  std::vector<std::vector<std::string>> parts;
  for (const auto& dir : dirs) parts.push_back(components(dir));
  std::vector<size_t> depth(dirs.size(), 1);
  std::vector<std::string> labels(dirs.size());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < dirs.size(); ++i) labels[i] = last_components(parts[i], depth[i]);
    for (size_t i = 0; i < dirs.size(); ++i) {
      const bool clash = std::count(labels.begin(), labels.end(), labels[i]) > 1;
      if (clash && depth[i] < parts[i].size()) {
        ++depth[i];
        changed = true;
      }
    }
  }
  // The same path twice (or paths that differ only above their common part): numbered.
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto same = std::count(labels.begin(), labels.begin() + i, labels[i]);
    if (same > 0) labels[i] += fmt::format(" #{}", same + 1);
  }
  return labels;
}

PlotSeries loss_series(const LabelledMetrics& run, MetricsAxis axis) {
  PlotSeries s;
  s.label = run.label;
  for (const auto& p : run.metrics.progress) {
    if (!std::isfinite(p.loss)) continue;  // every step of the interval skipped
    s.x.push_back(axis == MetricsAxis::kTokens && p.tokens_seen >= 0 ? p.tokens_seen
                                                                     : x_at(run, p.step, axis));
    s.y.push_back(p.loss);
  }
  return s;
}

PlotSeries validation_series(const LabelledMetrics& run, MetricsAxis axis) {
  PlotSeries s;
  s.label = run.label;
  for (const auto& v : run.metrics.validations) {
    s.x.push_back(x_at(run, v.step, axis));
    s.y.push_back(v.ppl);
  }
  return s;
}

std::vector<MetricsPlot> training_plots(const std::vector<LabelledMetrics>& runs,
                                        MetricsAxis axis) {
  MetricsPlot loss{"loss", {}}, valid{"valid", {}};
  for (auto* plot : {&loss.spec, &valid.spec}) {
    plot->xlabel = axis_label(axis);
    plot->log_x = false;
    plot->key_title = "";
  }
  loss.spec.title = "Training loss (mean over each log interval)";
  loss.spec.ylabel = "training loss (nats per token)";
  loss.spec.points = false;
  valid.spec.title = "Validation perplexity";
  valid.spec.ylabel = "validation perplexity";
  for (const auto& run : runs) {
    if (PlotSeries s = loss_series(run, axis); !s.x.empty()) loss.spec.series.push_back(s);
    if (PlotSeries s = validation_series(run, axis); !s.x.empty()) valid.spec.series.push_back(s);
  }
  if (loss.spec.series.empty()) {
    throw InputError("no training progress (lines with \"loss\") in " + join(metrics_files(runs)) +
                     ": nothing to draw");
  }
  std::vector<MetricsPlot> out = {loss};
  if (!valid.spec.series.empty()) out.push_back(valid);
  return out;
}

std::vector<MetricsPlot> probe_plots(const std::vector<LabelledMetrics>& runs, MetricsAxis axis) {
  std::vector<std::string> families;  // in the order they first appear
  for (const auto& run : runs) {
    for (const auto& p : run.metrics.probes) {
      if (std::find(families.begin(), families.end(), p.series) == families.end())
        families.push_back(p.series);
    }
  }
  if (families.empty()) {
    throw InputError(
        "no probe results in " + join(metrics_files(runs)) + ": the run" +
        (runs.size() > 1 ? "s were" : " was") +
        " trained without probes. Name probes in the config's train.probes (with "
        "train.probe_interval) to record them during training; `txl eval --run RUN --probes "
        "NAMES` probes a finished run once");
  }
  std::vector<MetricsPlot> out;
  std::set<std::string> names;
  for (const auto& family : families) {
    MetricsPlot plot{file_safe(family), {}};
    for (int n = 2; !names.insert(plot.name).second; ++n)
      plot.name = file_safe(family) + "-" + std::to_string(n);
    plot.spec.title = fmt::format("{} during training (probe {})", family, probe_of(runs, family));
    plot.spec.xlabel = axis_label(axis);
    plot.spec.ylabel = family;
    plot.spec.log_x = false;
    plot.spec.key_title = "";
    plot.spec.series = family_series(runs, family, axis);
    if (!plot.spec.series.empty()) out.push_back(plot);
  }
  return out;
}

nlohmann::json metrics_plots_json(const std::vector<MetricsPlot>& plots,
                                  const std::vector<std::string>& files, MetricsAxis axis) {
  nlohmann::json j = {{"x_axis", axis == MetricsAxis::kStep ? "step" : "tokens"},
                      {"plots", nlohmann::json::array()}};
  for (size_t i = 0; i < plots.size(); ++i) {
    const PlotSpec& spec = plots[i].spec;
    nlohmann::json plot = {{"name", plots[i].name}, {"file", files.at(i)},
                           {"title", spec.title},   {"xlabel", spec.xlabel},
                           {"ylabel", spec.ylabel}, {"series", nlohmann::json::array()}};
    for (const auto& s : spec.series)
      plot["series"].push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}});
    j["plots"].push_back(plot);
  }
  return j;
}

}  // namespace txl
