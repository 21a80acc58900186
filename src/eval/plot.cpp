#include "txl/eval/plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/fmt/fmt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "txl/util/env.h"
#include "txl/util/fs.h"
#include "txl/util/text.h"

extern char** environ;

namespace txl {

namespace fs = std::filesystem;

namespace {

// A gnuplot double-quoted string: backslash and quote escaped.
std::string gp_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Removes a temporary directory on every exit path.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "txl-plot-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary directory for the plot");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The range the series cover (error bars included) and the distinct x values, sorted.
struct PlotExtent {
  double ymin = 0, ymax = 0;
  int64_t xmin = 0, xmax = 0;
  std::vector<int64_t> xs;
};

PlotExtent plot_extent(const PlotSpec& spec) {
  PlotExtent e;
  bool first = true;
  for (const auto& s : spec.series) {
    for (size_t i = 0; i < s.y.size(); ++i) {
      const double lo = s.lo.empty() ? s.y[i] : s.lo[i], hi = s.hi.empty() ? s.y[i] : s.hi[i];
      e.ymin = first ? lo : std::min(e.ymin, lo);
      e.ymax = first ? hi : std::max(e.ymax, hi);
      e.xmin = first ? s.x[i] : std::min(e.xmin, s.x[i]);
      e.xmax = first ? s.x[i] : std::max(e.xmax, s.x[i]);
      first = false;
      e.xs.push_back(s.x[i]);
    }
  }
  std::sort(e.xs.begin(), e.xs.end());
  e.xs.erase(std::unique(e.xs.begin(), e.xs.end()), e.xs.end());
  return e;
}

// Title, axis labels, scales and ranges.
std::string axes_script(const PlotSpec& spec, const PlotExtent& extent, bool log_y) {
  std::string s;
  s += "set encoding utf8\n";
  s += "set termoption noenhanced\n";
  // One line higher than gnuplot puts it: the training-length label sits above the graph.
  s += fmt::format("set title {} offset 0,1\n", gp_quote(spec.title));
  s += fmt::format("set xlabel {}\n", gp_quote(spec.xlabel));
  s += fmt::format("set ylabel {}\n", gp_quote(spec.ylabel + (log_y ? " (log scale)" : "")));
  if (spec.log_x) s += "set logscale x 2\n";
  if (log_y) s += "set logscale y 10\n";
  // Ticks exactly at the evaluated lengths, with some room on both sides of them.
  const std::vector<int64_t>& xs = extent.xs;
  std::string tics;
  for (size_t i = 0; i < xs.size(); ++i)
    tics += fmt::format("{}\"{}\" {}", i ? ", " : "", xs[i], xs[i]);
  if (!xs.empty() && spec.log_x) {
    s += fmt::format("set xtics ({})\n", tics);
    s += fmt::format("set xrange [{}:{}]\n", static_cast<double>(extent.xmin) / 1.4,
                     static_cast<double>(extent.xmax) * 1.4);
  }
  if (!spec.log_x && spec.x_max > 0) s += fmt::format("set xrange [0:{}]\n", spec.x_max);
  return s;
}

// Grid, legend, and a dashed vertical line with its label at each mark.
std::string key_and_marks_script(const PlotSpec& spec) {
  std::string s;
  s += "set grid xtics ytics lc rgb '#dddddd'\n";
  // Outside the plot area: a legend inside would cover the lines wherever they happen to run.
  s += "set key outside right top vertical box\n";
  s += "set tmargin 5\n";
  if (!spec.key_title.empty()) s += fmt::format("set key title {}\n", gp_quote(spec.key_title));
  for (const auto m : spec.marks) {
    s += fmt::format(
        "set arrow from {}, graph 0 to {}, graph 1 nohead dashtype 2 lw 1.5 lc rgb '#555555'\n", m,
        m);
    std::string text = spec.mark_label;
    const auto at = text.find("{}");
    if (at != std::string::npos) text.replace(at, 2, std::to_string(m));
    // Above the plot area, where no line or error bar can hide it.
    s += fmt::format("set label {} at {}, graph 1 center offset 0,0.8 tc rgb '#555555'\n",
                     gp_quote(text), m);
  }
  return s;
}

// The plot command: one line per series (with its band or error bars), ending in a newline.
std::string plot_command(const PlotSpec& spec, const std::string& data_path) {
  // gnuplot's default colours repeat after eight series; a study compares ten encodings and
  // more. Twelve distinct colours (Tableau 10 plus black and light blue), a point shape per
  // series, dashes once the colours come round again.
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                         "#bcbd22", "#17becf", "#000000", "#aec7e8"};
  static const int kPoints[] = {7, 5, 9, 11, 13, 15, 4, 6};
  constexpr size_t kNColours = sizeof(kColours) / sizeof(kColours[0]);
  constexpr size_t kNPoints = sizeof(kPoints) / sizeof(kPoints[0]);
  std::string plot = "plot ";
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const bool bars = !spec.series[i].lo.empty();
    const std::string colour = kColours[i % kNColours];
    const std::string sep = i ? ", \\\n     " : "";
    if (bars && spec.bands) {
      // The band first, so that every line is drawn over the bands.
      plot += fmt::format(
          "{}{} index {} using 1:3:4 with filledcurves fs transparent solid 0.18 noborder "
          "lc rgb '{}' notitle",
          sep, gp_quote(data_path), i, colour);
    }
    const std::string style = bars && !spec.bands ? "yerrorlines"
                              : spec.points       ? "linespoints"
                                                  : "lines";
    plot +=
        fmt::format("{}{} index {} using 1:2{} with {} lw 2 lc rgb '{}' pt {} ps 1 dt {} title {}",
                    bars && spec.bands ? ", \\\n     " : sep, gp_quote(data_path), i,
                    bars && !spec.bands ? ":3:4" : "", style, colour, kPoints[i % kNPoints],
                    1 + i / kNColours, gp_quote(spec.series[i].label));
  }
  plot += "\n";
  return plot;
}

// The plot drawn to the PNG (pngcairo where this gnuplot has it) and, when asked, the SVG.
std::string output_script(const std::string& plot, const std::string& png_path,
                          const std::string& svg_path) {
  std::string s;
  s += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
       "  set terminal pngcairo size 1100,700 font 'sans,12' noenhanced\n"
       "} else {\n"
       "  set terminal png size 1100,700 noenhanced\n"
       "}\n";
  s += fmt::format("set output {}\n", gp_quote(png_path));
  s += plot;
  s += "set output\n";
  if (!svg_path.empty()) {
    s += "set terminal svg size 1100,700 dynamic font 'sans,12' noenhanced\n";
    s += fmt::format("set output {}\n", gp_quote(svg_path));
    s += plot;
    s += "set output\n";
  }
  return s;
}

}  // namespace

std::string find_on_path(const std::string& program) {
  const auto path = env_text("PATH");
  if (!path) return "";
  std::stringstream ss(*path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (is_regular_file(candidate) && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string gnuplot_script(const PlotSpec& spec, const std::string& data_path,
                           const std::string& png_path, const std::string& svg_path) {
  const PlotExtent extent = plot_extent(spec);
  const bool log_y = extent.ymin > 0 && extent.ymax / extent.ymin > 10.0;
  return axes_script(spec, extent, log_y) + key_and_marks_script(spec) +
         output_script(plot_command(spec, data_path), png_path, svg_path);
}

namespace {

// Writes the data (write_data fills the file it is given), runs gnuplot on the script made
// for that data and the temporary images, and moves the images into place only when both
// were drawn: a failed run leaves no partial image behind.
void draw_with_gnuplot(
    const std::function<void(std::ostream&)>& write_data,
    const std::function<std::string(const std::string& data, const std::string& png,
                                    const std::string& svg)>& script_for,
    const std::string& png_path, const std::string& svg_path) {
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    throw PlotToolMissing("cannot draw " + png_path +
                          ": gnuplot is not installed (not found on PATH). Install it with "
                          "`sudo apt-get install gnuplot-nox` and run again, or leave out --plot");
  }
  TempDir tmp;
  const std::string data = tmp.path + "/data.dat", script = tmp.path + "/plot.gp",
                    log = tmp.path + "/gnuplot.log";
  const std::string tmp_png = tmp.path + "/plot.png",
                    tmp_svg = svg_path.empty() ? "" : tmp.path + "/plot.svg";
  {
    std::ofstream out(data);
    write_data(out);
    std::ofstream(script) << script_for(data, tmp_png, tmp_svg);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv = {const_cast<char*>(gnuplot.c_str()), const_cast<char*>(script.c_str()),
                             nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + gnuplot + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waiting for gnuplot failed");
  }
  const std::string messages = read_all(log);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !is_regular_file(tmp_png) ||
      (!tmp_svg.empty() && !is_regular_file(tmp_svg))) {
    throw std::runtime_error("gnuplot failed to draw " + png_path + ":\n" + messages);
  }
  write_file_atomic(png_path, read_all(tmp_png));
  if (!tmp_svg.empty()) write_file_atomic(svg_path, read_all(tmp_svg));
}

// tics ('32' 0, '64' 1, ...): one tic per cell, labelled with the cell's value.
std::string label_tics(const std::vector<std::string>& labels) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < labels.size(); ++i)
    parts.push_back(fmt::format("{} {}", gp_quote(labels[i]), i));
  return "(" + join(parts, ", ") + ")";
}

}  // namespace

void write_plot(const PlotSpec& spec, const std::string& png_path, const std::string& svg_path) {
  // One data block per series; blocks are separated by two blank lines (gnuplot `index`).
  const auto write_data = [&](std::ostream& out) {
    for (const auto& series : spec.series) {
      out << "# " << series.label << "\n";
      for (size_t i = 0; i < series.x.size(); ++i) {
        out << series.x[i] << ' ' << fmt::format("{:.10g}", series.y[i]);
        if (!series.lo.empty())
          out << ' ' << fmt::format("{:.10g} {:.10g}", series.lo[i], series.hi[i]);
        out << '\n';
      }
      out << "\n\n";
    }
  };
  draw_with_gnuplot(
      write_data,
      [&](const std::string& data, const std::string& png, const std::string& svg) {
        return gnuplot_script(spec, data, png, svg);
      },
      png_path, svg_path);
}

std::string heatmap_script(const HeatmapSpec& spec, const std::string& data_path,
                           const std::string& png_path, const std::string& svg_path) {
  std::string s;
  s += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\nset cblabel {}\n",
                   gp_quote(spec.title), gp_quote(spec.xlabel), gp_quote(spec.ylabel),
                   gp_quote(spec.cblabel));
  s += fmt::format("set xtics {}\nset ytics {}\n", label_tics(spec.x_labels),
                   label_tics(spec.y_labels));
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [-0.5:{}]\n", spec.x_labels.size() - 0.5,
                   spec.y_labels.size() - 0.5);
  s += fmt::format("set cbrange [{:g}:{:g}]\n", spec.zmin, spec.zmax);
  s += "set palette defined (0 '#f7fbff', 0.5 '#6baed6', 1 '#08306b')\n";
  // Each cell's value written on it while the cells are wide enough to hold it; white on the
  // dark half of the palette.
  const bool labels = spec.x_labels.size() <= 12;
  std::string plot = fmt::format("plot {} using 1:2:3 with image notitle", gp_quote(data_path));
  if (labels) {
    const double mid = (spec.zmin + spec.zmax) / 2;
    plot += fmt::format(
        ", \\\n     {0} using 1:2:(sprintf('%.2f', $3)):($3 > {1:g} ? 0xffffff : 0x000000) "
        "with labels tc rgb variable font ',10' notitle",
        gp_quote(data_path), mid);
  }
  plot += "\n";
  return s + output_script(plot, png_path, svg_path);
}

void write_heatmap(const HeatmapSpec& spec, const std::string& png_path,
                   const std::string& svg_path) {
  if (spec.values.size() != spec.y_labels.size())
    throw std::invalid_argument("heatmap: one row of values per y label");
  const auto write_data = [&](std::ostream& out) {
    for (size_t y = 0; y < spec.values.size(); ++y) {
      if (spec.values[y].size() != spec.x_labels.size())
        throw std::invalid_argument("heatmap: one value per x label in every row");
      for (size_t x = 0; x < spec.values[y].size(); ++x)
        out << x << ' ' << y << ' ' << fmt::format("{:.10g}", spec.values[y][x]) << '\n';
    }
  };
  draw_with_gnuplot(
      write_data,
      [&](const std::string& data, const std::string& png, const std::string& svg) {
        return heatmap_script(spec, data, png, svg);
      },
      png_path, svg_path);
}

}  // namespace txl
