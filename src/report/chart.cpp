#include "report/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "report/format.h"

namespace calc {

namespace {

// One colour per model, shared by both renderings so the Markdown caption matches the SVG.
struct colour {
  const char* hex;
  const char* name;
};
constexpr colour kColours[] = {{"#1f77b4", "blue"}, {"#ff7f0e", "orange"}, {"#2ca02c", "green"},
                               {"#d62728", "red"},  {"#9467bd", "purple"}, {"#8c564b", "brown"},
                               {"#e377c2", "pink"}, {"#7f7f7f", "grey"},   {"#bcbd22", "olive"},
                               {"#17becf", "cyan"}};
constexpr std::size_t kColourCount = sizeof(kColours) / sizeof(kColours[0]);

const colour& colour_of(std::size_t i) { return kColours[i % kColourCount]; }

/// A value for a chart: four significant digits are plenty for a picture.
std::string point(double v) {
  if (v == 0) return "0";
  return fmt::format("{:.4g}", v);
}

/// Mermaid strings are double-quoted; a quote inside would end them.
std::string quoted(std::string text) {
  std::replace(text.begin(), text.end(), '"', '\'');
  return "\"" + text + "\"";
}

double max_value(const chart& c) {
  double top = 0;
  for (const chart_series& s : c.lines)
    for (double v : s.y) top = std::max(top, v);
  return top;
}

}  // namespace

bool log_x(const chart& c) {
  return c.x.size() > 1 && c.x.front() > 0 && c.x.back() >= 100 * c.x.front();
}

bool log_y(const chart& c) {
  double lo = 0, hi = 0;
  for (const chart_series& s : c.lines)
    for (double v : s.y) {
      if (v <= 0) return false;
      lo = lo == 0 ? v : std::min(lo, v);
      hi = std::max(hi, v);
    }
  return lo > 0 && hi >= 100 * lo;
}

std::string mermaid(const chart& c) {
  std::string palette;
  for (std::size_t i = 0; i < c.lines.size(); ++i)
    palette += (i ? ", " : "") + std::string(colour_of(i).hex);
  std::string out = "```mermaid\n---\nconfig:\n  themeVariables:\n    xyChart:\n";
  out += fmt::format("      plotColorPalette: \"{}\"\n---\nxychart-beta\n", palette);
  out += fmt::format("  title {}\n", quoted(c.title));
  std::string labels;
  for (std::int64_t x : c.x) labels += (labels.empty() ? "" : ", ") + quoted(human_tokens(x));
  out += fmt::format("  x-axis {} [{}]\n", quoted(c.x_label), labels);
  double top = max_value(c);
  out += fmt::format("  y-axis {} 0 --> {}\n", quoted(c.y_label), point(top > 0 ? top * 1.05 : 1));
  for (const chart_series& s : c.lines) {
    std::string values;
    for (double v : s.y) values += (values.empty() ? "" : ", ") + point(v);
    out += fmt::format("  line [{}]\n", values);
  }
  out += "```\n\n";
  std::string legend;
  for (std::size_t i = 0; i < c.lines.size(); ++i)
    legend += fmt::format("{}{} ({})", i ? ", " : "", c.lines[i].name, colour_of(i).name);
  out += fmt::format("Lines: {}. Lengths are evenly spaced as labelled{}.\n", legend,
                     log_x(c) ? " (a log scale)" : "");
  return out;
}

std::string gnuplot_data(const chart& c) {
  std::string out = "# length";
  for (const chart_series& s : c.lines) out += " \"" + s.name + "\"";
  out += "\n";
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    out += std::to_string(c.x[i]);
    for (const chart_series& s : c.lines) out += " " + fmt::format("{:.9g}", s.y[i]);
    out += "\n";
  }
  return out;
}

std::string gnuplot_script(const chart& c, const std::string& data_file,
                           const std::string& svg_file) {
  std::string out;
  out += "set terminal svg size 800,480 dynamic font 'sans,13' background '#ffffff'\n";
  out += fmt::format("set output '{}'\n", svg_file);
  out += fmt::format("set title '{}'\n", c.title);
  out += fmt::format("set xlabel '{}'\n", c.x_label);
  out += fmt::format("set ylabel '{}'\n", c.y_label);
  out += "set grid\nset key outside right top box\n";
  if (log_x(c)) out += "set logscale x 2\n";
  if (log_y(c)) {
    out += "set logscale y 10\n";
  } else {
    out += "set yrange [0:*]\n";
  }
  // Length ticks as they are spoken (1K, 128K, 1M), at most about a dozen of them.
  std::size_t every = (c.x.size() + 11) / 12;
  std::string tics;
  for (std::size_t i = 0; i < c.x.size(); i += every)
    tics += fmt::format("{}\"{}\" {}", tics.empty() ? "" : ", ", human_tokens(c.x[i]), c.x[i]);
  out += fmt::format("set xtics ({})\n", tics);
  out += "plot ";
  for (std::size_t i = 0; i < c.lines.size(); ++i)
    out += fmt::format("{}'{}' using 1:{} with linespoints lw 2 pt 7 ps 0.6 lc rgb '{}' title '{}'",
                       i ? ", \\\n     " : "", data_file, i + 2, colour_of(i).hex, c.lines[i].name);
  return out + "\n";
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

std::optional<std::string> draw_svg(const chart& c, const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.find('\'') != std::string::npos)  // the folder is quoted in a shell command below
    throw spec_error("--plot-dir",
                     fmt::format("'{}': a folder name with a quote is not supported", dir));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw spec_error("--plot-dir", fmt::format("cannot create {}: {}", dir, ec.message()));
  fs::path data = fs::path(dir) / (c.id + ".dat");
  fs::path script = fs::path(dir) / (c.id + ".gp");
  std::ofstream(data) << gnuplot_data(c);
  // gnuplot runs inside DIR, so the script names its files without the folder.
  std::ofstream(script) << gnuplot_script(c, c.id + ".dat", c.id + ".svg");
  if (!fs::exists(script))
    throw spec_error("--plot-dir", fmt::format("cannot write {}", script.string()));
  if (!have_gnuplot())
    return "gnuplot is not installed: no SVG drawn (the .gp scripts are in " + dir +
           "); the Mermaid charts show the same data";
  std::string command =
      fmt::format("cd '{}' && gnuplot '{}.gp' 2>/dev/null", dir, c.id);  // dir from the user
  if (std::system(command.c_str()) != 0 || !fs::exists(fs::path(dir) / (c.id + ".svg")))
    return fmt::format("gnuplot failed on {}; the Mermaid charts show the same data",
                       script.string());
  return std::nullopt;
}

}  // namespace calc
