// Line charts of a quantity against context length, one line per model: as a Mermaid
// `xychart-beta` block (rendered by GitHub and GitLab with no tool) and as an SVG drawn by
// gnuplot. Both show the same points; only the SVG has a real log axis and a legend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace calc {

/// One model's line: a y value per x point.
struct chart_series {
  std::string name;
  std::vector<double> y;
};

struct chart {
  std::string id;               // file stem of the SVG: "state" -> state.svg
  std::string title;            // "State per request"
  std::string x_label;          // "context length (tokens)"
  std::string y_label;          // "state per request (GiB)"
  std::vector<std::int64_t> x;  // context lengths, increasing
  std::vector<chart_series> lines;
};

/// True when the lengths span two decades or more: the SVG then uses a log-2 length axis.
bool log_x(const chart& c);

/// True when every value is positive and they span two decades or more (a log y axis).
bool log_y(const chart& c);

/// The chart as a fenced Mermaid block, then one line naming each line's colour (Mermaid's
/// xychart has no legend of its own).
std::string mermaid(const chart& c);

/// The gnuplot script that draws the chart from `data_file` into `svg_file`.
std::string gnuplot_script(const chart& c, const std::string& data_file,
                           const std::string& svg_file);

/// The chart's points as gnuplot data: one row per length, one column per line.
std::string gnuplot_data(const chart& c);

/// Writes DIR/<id>.dat, DIR/<id>.gp and runs gnuplot to draw DIR/<id>.svg. Returns nullopt on
/// success, else one line saying why there is no SVG (gnuplot missing, or it failed).
std::optional<std::string> draw_svg(const chart& c, const std::string& dir);

/// True when a `gnuplot` executable is on the PATH.
bool have_gnuplot();

}  // namespace calc
