// Perplexity-against-length plots, drawn by gnuplot (Debian package gnuplot-nox).
//
// We write a data file and a gnuplot script into a fresh temporary directory, run
// `gnuplot script`, and move the finished images into place, so a failed run leaves no
// partial image behind.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace txl {

struct PlotSeries {
  std::string label;
  std::vector<int64_t> x;
  std::vector<double> y;
  std::vector<double> lo;  // interval ends (same size as y), or empty for no error bars
  std::vector<double> hi;
};

struct PlotSpec {
  std::string title;
  std::string xlabel;
  std::string ylabel;
  std::vector<PlotSeries> series;
  std::vector<int64_t> marks;  // vertical lines (training lengths)
  std::string mark_label;      // e.g. "trained at {}", {} replaced by the length
  bool log_x = true;           // base-2 x axis with ticks at the data's x (false: linear)
  int64_t x_max = 0;           // linear x: the axis runs from 0 to this (0: gnuplot's choice)
  bool bands = false;          // intervals as shaded bands instead of error bars
  bool points = true;          // a point shape at each value
  std::string key_title = "bars: 95% interval";
};

// Thrown when gnuplot is not on PATH; the message says how to install it.
class PlotToolMissing : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The full path of an executable found on PATH, or "" when there is none.
std::string find_on_path(const std::string& program);

// The gnuplot script for a spec, given where the data file is and the images go.
// Log-scale x (base 2) unless !log_x; log-scale y when the values span more than a factor of 10.
std::string gnuplot_script(const PlotSpec& spec, const std::string& data_path,
                           const std::string& png_path, const std::string& svg_path);

// Draws the spec into png_path (pngcairo terminal, or png when gnuplot lacks cairo) and,
// when svg_path is not empty, into svg_path. PlotToolMissing when gnuplot is not
// installed; std::runtime_error with gnuplot's own message when it fails.
void write_plot(const PlotSpec& spec, const std::string& png_path, const std::string& svg_path);

// A grid of values drawn as coloured cells with their numbers (the passkey probe's length x
// depth picture, attention by distance per head): values[y][x].
struct HeatmapSpec {
  std::string title;
  std::string xlabel;
  std::string ylabel;
  std::string cblabel;
  std::vector<std::string> x_labels;
  std::vector<std::string> y_labels;
  std::vector<std::vector<double>> values;
  double zmin = 0.0, zmax = 1.0;
};

std::string heatmap_script(const HeatmapSpec& spec, const std::string& data_path,
                           const std::string& png_path, const std::string& svg_path);

// As write_plot, for a heatmap.
void write_heatmap(const HeatmapSpec& spec, const std::string& png_path,
                   const std::string& svg_path);

}  // namespace txl
