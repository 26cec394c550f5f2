// Line charts of a quantity against context length, one line per model: as a Mermaid
// `xychart-beta` block (rendered by GitHub and GitLab with no tool) followed by a legend table,
// and as an SVG drawn by gnuplot. Both show the same points. A model with no value at a length
// (it does not fit there) has a gap, never a zero; one with no value at all is left out of the
// drawing and said so in words. Values spanning two decades or more get a log axis.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace calc {

/// One model's line: a y value per x point; NaN where the model has none (it does not fit).
struct chart_series {
  std::string name;
  std::vector<double> y;
  std::string note;  // said in the legend: why there are gaps, or no line at all
};

struct chart {
  std::string id;               // file stem of the SVG: "state" -> state.svg
  std::string title;            // "State per request"
  std::string x_label;          // "context length (tokens)"
  std::string y_label;          // "state per request (GiB)"
  std::vector<std::int64_t> x;  // context lengths, increasing
  std::vector<chart_series> lines;
  std::string gpu;      // the accelerator the figures are for: "NVIDIA H100 SXM5 80GB"
  std::string formats;  // weights and cache formats: "bf16 weights, bf16 KV"
  std::string layout;   // the deployment: "one card per model"
};

/// The title as drawn: the quantity, then the GPU, formats and layout it is for.
std::string full_title(const chart& c);

/// True when the lengths span two decades or more: the SVG then uses a log-2 length axis.
bool log_x(const chart& c);

/// True when every value drawn is positive and they span two decades or more (a log y axis).
bool log_y(const chart& c);

/// True when a line has at least one value to draw.
bool drawn(const chart_series& s);

/// The chart as a fenced Mermaid block (lines with no value at all left out; with a log y axis
/// the values are drawn as log10), then a legend table: each line's colour, its first and last
/// values, and its note.
std::string mermaid(const chart& c);

/// The gnuplot script that draws the chart from `data_file` into `svg_file`.
std::string gnuplot_script(const chart& c, const std::string& data_file,
                           const std::string& svg_file);

/// The chart's points as gnuplot data: one row per length, one column per line ("?" where a
/// line has no value).
std::string gnuplot_data(const chart& c);

/// Writes DIR/<id>.dat, DIR/<id>.gp and runs gnuplot to draw DIR/<id>.svg. Returns nullopt on
/// success, else one line saying why there is no SVG (gnuplot missing, or it failed).
std::optional<std::string> draw_svg(const chart& c, const std::string& dir);

/// A line with x values of its own (a Pareto curve): (x[i], y[i]) points in drawing order.
struct xy_series {
  std::string name;
  std::vector<double> x, y;
  std::string note;  // why there is no line
};

/// A chart of lines that share no x points (throughput per GPU against per user): drawn as SVG
/// only, since Mermaid's xychart has one categorical x axis; the document gives the points as a
/// table beside it. Axes spanning two decades or more are drawn log-scaled.
struct xy_chart {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<xy_series> lines;
  std::string gpu, formats, layout;  // as chart's
};

/// The title as drawn (as full_title for a chart).
std::string full_title(const xy_chart& c);

/// The points as gnuplot data: one block per line (its name in a comment), blocks apart by two
/// blank lines, so `index i` picks line i.
std::string gnuplot_data(const xy_chart& c);

/// The gnuplot script that draws `data_file` into `svg_file`.
std::string gnuplot_script(const xy_chart& c, const std::string& data_file,
                           const std::string& svg_file);

/// As draw_svg for a chart.
std::optional<std::string> draw_svg(const xy_chart& c, const std::string& dir);

/// True when a `gnuplot` executable is on the PATH.
bool have_gnuplot();

/// A line's style, distinct for every line up to 40 models: colour (20), dash pattern and
/// point shape change every 20 and 10 lines.
struct line_style {
  const char* hex;   // "#1f77b4"
  const char* name;  // "blue"
  int dash;          // gnuplot dashtype: 1 solid, 2 dashed, 3 dotted, 4 dash-dot
  int point;         // gnuplot pointtype
};
line_style style_of(std::size_t line);

}  // namespace calc
