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

// Twenty colours (matplotlib's tab20 order: the ten strong ones, then their light partners),
// shared by both renderings so the Markdown legend matches the SVG.
struct colour {
  const char* hex;
  const char* name;
};
constexpr colour kColours[] = {
    {"#1f77b4", "blue"},        {"#ff7f0e", "orange"},     {"#2ca02c", "green"},
    {"#d62728", "red"},         {"#9467bd", "purple"},     {"#8c564b", "brown"},
    {"#e377c2", "pink"},        {"#7f7f7f", "grey"},       {"#bcbd22", "olive"},
    {"#17becf", "cyan"},        {"#aec7e8", "light blue"}, {"#ffbb78", "light orange"},
    {"#98df8a", "light green"}, {"#ff9896", "light red"},  {"#c5b0d5", "light purple"},
    {"#c49c94", "light brown"}, {"#f7b6d2", "light pink"}, {"#c7c7c7", "light grey"},
    {"#dbdb8d", "light olive"}, {"#9edae5", "light cyan"}};
constexpr std::size_t kColourCount = sizeof(kColours) / sizeof(kColours[0]);
constexpr int kPoints[] = {7, 5, 9, 13};  // circle, square, triangle, diamond

/// A value for a chart: four significant digits are plenty for a picture.
std::string point(double v) {
  if (v == 0) return "0";
  return fmt::format("{:.4g}", v);
}

/// A value for the legend table: four significant digits, never scientific.
std::string legend_value(double v) {
  if (!std::isfinite(v)) return "—";
  if (v == 0) return "0";
  int digits = 4 - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v))));
  std::string s = fmt::format("{:.{}f}", v, std::clamp(digits, 0, 12));
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

/// Mermaid strings are double-quoted; a quote inside would end them.
std::string quoted(std::string text) {
  std::replace(text.begin(), text.end(), '"', '\'');
  return "\"" + text + "\"";
}

/// gnuplot strings are single-quoted: a quote inside is doubled.
std::string gp_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

/// The smallest and largest values drawn (NaN: no value).
std::pair<double, double> value_range(const chart& c) {
  double lo = NAN, hi = NAN;
  for (const chart_series& s : c.lines)
    for (double v : s.y) {
      if (std::isnan(v)) continue;
      lo = std::isnan(lo) ? v : std::min(lo, v);
      hi = std::isnan(hi) ? v : std::max(hi, v);
    }
  return {lo, hi};
}

}  // namespace

line_style style_of(std::size_t line) {
  const colour& c = kColours[line % kColourCount];
  return {c.hex, c.name, static_cast<int>((line / kColourCount) % 4) + 1, kPoints[(line / 10) % 4]};
}

namespace {

std::string title_in_context(const std::string& title, const std::string& gpu,
                             const std::string& formats, const std::string& layout) {
  std::string context;
  for (const std::string& part : {gpu, formats, layout})
    if (!part.empty()) context += (context.empty() ? "" : ", ") + part;
  return context.empty() ? title : title + " (" + context + ")";
}

/// True when the positive values span two decades or more (none <= 0).
bool spans_decades(const std::vector<const std::vector<double>*>& values) {
  double lo = NAN, hi = NAN;
  for (const std::vector<double>* v : values)
    for (double x : *v) {
      if (std::isnan(x)) continue;
      if (x <= 0) return false;
      lo = std::isnan(lo) ? x : std::min(lo, x);
      hi = std::isnan(hi) ? x : std::max(hi, x);
    }
  return !std::isnan(lo) && hi >= 100 * lo;
}

/// Writes DIR/ID.dat and DIR/ID.gp and runs gnuplot in DIR; nullopt when ID.svg was drawn.
std::optional<std::string> run_gnuplot(const std::string& id, const std::string& dir,
                                       const std::string& data, const std::string& script_text);

}  // namespace

std::string full_title(const chart& c) {
  return title_in_context(c.title, c.gpu, c.formats, c.layout);
}

std::string full_title(const xy_chart& c) {
  return title_in_context(c.title, c.gpu, c.formats, c.layout);
}

bool drawn(const chart_series& s) {
  return std::any_of(s.y.begin(), s.y.end(), [](double v) { return !std::isnan(v); });
}

bool log_x(const chart& c) {
  return c.x.size() > 1 && c.x.front() > 0 && c.x.back() >= 100 * c.x.front();
}

bool log_y(const chart& c) {
  for (const chart_series& s : c.lines)
    for (double v : s.y)
      if (!std::isnan(v) && v <= 0) return false;
  auto [lo, hi] = value_range(c);
  return !std::isnan(lo) && lo > 0 && hi >= 100 * lo;
}

std::string mermaid(const chart& c) {
  bool log = log_y(c);
  std::vector<std::size_t> shown;  // lines with at least one value
  for (std::size_t i = 0; i < c.lines.size(); ++i)
    if (drawn(c.lines[i])) shown.push_back(i);
  std::string out;
  if (!shown.empty()) {
    std::string palette;
    for (std::size_t i : shown)
      palette += (palette.empty() ? "" : ", ") + std::string(style_of(i).hex);
    out = "```mermaid\n---\nconfig:\n  themeVariables:\n    xyChart:\n";
    out += fmt::format("      plotColorPalette: \"{}\"\n---\nxychart-beta\n", palette);
    out += fmt::format("  title {}\n", quoted(full_title(c)));
    std::string labels;
    for (std::int64_t x : c.x) labels += (labels.empty() ? "" : ", ") + quoted(human_tokens(x));
    out += fmt::format("  x-axis {} [{}]\n", quoted(c.x_label), labels);
    auto [lo, hi] = value_range(c);
    // Mermaid has no log axis: values spanning decades are drawn as their log10.
    if (log) {
      out += fmt::format("  y-axis {} {} --> {}\n", quoted("log10 of " + c.y_label),
                         point(std::floor(std::log10(lo))), point(std::ceil(std::log10(hi))));
    } else {
      out +=
          fmt::format("  y-axis {} 0 --> {}\n", quoted(c.y_label), point(hi > 0 ? hi * 1.05 : 1));
    }
    for (std::size_t i : shown) {
      std::string values;
      // Mermaid lines cannot break: a length with no value is drawn at the axis floor and the
      // legend says where.
      for (double v : c.lines[i].y) {
        double at =
            std::isnan(v) ? (log ? std::floor(std::log10(lo)) : 0) : (log ? std::log10(v) : v);
        values += (values.empty() ? "" : ", ") + point(at);
      }
      out += fmt::format("  line [{}]\n", values);
    }
    out += "```\n\n";
  }
  // The legend: each line's colour and its values at the first and last lengths (in the y
  // axis unit), and why a line has gaps or is not drawn.
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const chart_series& s = c.lines[i];
    bool any = drawn(s);
    bool gaps = any && std::any_of(s.y.begin(), s.y.end(), [](double v) { return std::isnan(v); });
    std::string note = s.note;
    if (gaps) note += std::string(note.empty() ? "" : "; ") + "drawn at the axis floor there";
    rows.push_back({s.name, any ? style_of(i).name : "not drawn",
                    s.y.empty() ? "—" : legend_value(s.y.front()),
                    s.y.empty() ? "—" : legend_value(s.y.back()), note});
  }
  std::string first = c.x.empty() ? "first" : "at " + human_tokens(c.x.front());
  std::string last = c.x.empty() ? "last" : "at " + human_tokens(c.x.back());
  out += aligned_table({"line", "colour", first, last, "note"}, rows,
                       {align::left, align::left, align::right, align::right, align::left});
  std::string scales;
  if (log_x(c)) scales = " Lengths are evenly spaced as labelled (a log scale).";
  if (log) scales += " Values span decades: the chart draws their log10.";
  if (!scales.empty()) out += "\n" + scales.substr(1) + "\n";
  return out;
}

std::string gnuplot_data(const chart& c) {
  std::string out = "# length";
  for (const chart_series& s : c.lines) out += " \"" + s.name + "\"";
  out += "\n";
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    out += std::to_string(c.x[i]);
    for (const chart_series& s : c.lines)
      out += " " + (std::isnan(s.y[i]) ? std::string("?") : fmt::format("{:.9g}", s.y[i]));
    out += "\n";
  }
  return out;
}

namespace {

/// The lines every calc chart script opens with: an SVG page, its title and axis labels.
std::string gnuplot_preamble(const std::string& svg_file, const std::string& title,
                             const std::string& x_label, const std::string& y_label) {
  std::string out;
  out += "set terminal svg size 800,480 dynamic font 'sans,13' background '#ffffff'\n";
  out += fmt::format("set output {}\n", gp_quoted(svg_file));
  out += fmt::format("set title {} noenhanced\n", gp_quoted(title));
  out += fmt::format("set xlabel {} noenhanced\n", gp_quoted(x_label));
  out += fmt::format("set ylabel {} noenhanced\n", gp_quoted(y_label));
  out += "set grid\nset key outside right top box noenhanced\nset datafile missing '?'\n";
  return out;
}

}  // namespace

std::string gnuplot_script(const chart& c, const std::string& data_file,
                           const std::string& svg_file) {
  std::string out;
  out += gnuplot_preamble(svg_file, full_title(c), c.x_label, c.y_label);
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
  std::string plots;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    if (!drawn(c.lines[i])) continue;  // said in the legend table, not drawn as a zero line
    line_style st = style_of(i);
    plots +=
        fmt::format("{}{} using 1:{} with linespoints lw 2 dt {} pt {} ps 0.6 lc rgb '{}' title {}",
                    plots.empty() ? "" : ", \\\n     ", gp_quoted(data_file), i + 2, st.dash,
                    st.point, st.hex, gp_quoted(c.lines[i].name));
  }
  if (plots.empty())
    return out +
           "set label 1 'no model has a value here' at graph 0.5,0.5 center\nplot NaN notitle\n";
  return out + "plot " + plots + "\n";
}

bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

namespace {

std::optional<std::string> run_gnuplot(const std::string& id, const std::string& dir,
                                       const std::string& data, const std::string& script_text) {
  namespace fs = std::filesystem;
  if (dir.find('\'') != std::string::npos)  // the folder is quoted in a shell command below
    throw spec_error("plot_dir",
                     fmt::format("'{}': a folder name with a quote is not supported", dir));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw spec_error("plot_dir", fmt::format("cannot create the folder: {}", ec.message()));
  fs::path data_file = fs::path(dir) / (id + ".dat");
  fs::path script = fs::path(dir) / (id + ".gp");
  std::ofstream(data_file) << data;
  std::ofstream(script) << script_text;
  if (!fs::exists(script, ec))
    throw spec_error("plot_dir", fmt::format("cannot write {}", script.string()));
  if (!have_gnuplot())
    return "gnuplot is not installed: no SVG drawn (the .gp scripts are in " + dir +
           "); the Mermaid charts show the same data";
  std::string command =
      fmt::format("cd '{}' && gnuplot '{}.gp' 2>/dev/null", dir, id);  // dir from the user
  if (std::system(command.c_str()) != 0 || !fs::exists(fs::path(dir) / (id + ".svg"), ec))
    return fmt::format("gnuplot failed on {}; the Mermaid charts show the same data",
                       script.string());
  return std::nullopt;
}

}  // namespace

std::optional<std::string> draw_svg(const chart& c, const std::string& dir) {
  // gnuplot runs inside DIR, so the script names its files without the folder.
  return run_gnuplot(c.id, dir, gnuplot_data(c), gnuplot_script(c, c.id + ".dat", c.id + ".svg"));
}

std::string gnuplot_data(const xy_chart& c) {
  std::string out;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const xy_series& s = c.lines[i];
    out += fmt::format("{}# {}\n", i ? "\n\n" : "", s.name);
    for (std::size_t j = 0; j < s.x.size() && j < s.y.size(); ++j)
      out += fmt::format("{:.9g} {:.9g}\n", s.x[j], s.y[j]);
    if (s.x.empty()) out += "? ?\n";  // an empty block would end the index early
  }
  return out;
}

std::string gnuplot_script(const xy_chart& c, const std::string& data_file,
                           const std::string& svg_file) {
  std::vector<const std::vector<double>*> xs, ys;
  for (const xy_series& s : c.lines) {
    xs.push_back(&s.x);
    ys.push_back(&s.y);
  }
  std::string out;
  out += gnuplot_preamble(svg_file, full_title(c), c.x_label, c.y_label);
  out += spans_decades(xs) ? "set logscale x 10\n" : "set xrange [0:*]\n";
  out += spans_decades(ys) ? "set logscale y 10\n" : "set yrange [0:*]\n";
  std::string plots;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    if (c.lines[i].x.empty()) continue;  // said in the document, not drawn
    line_style st = style_of(i);
    plots += fmt::format(
        "{}{} index {} using 1:2 with linespoints lw 2 dt {} pt {} ps 0.6 lc rgb '{}' title {}",
        plots.empty() ? "" : ", \\\n     ", gp_quoted(data_file), i, st.dash, st.point, st.hex,
        gp_quoted(c.lines[i].name));
  }
  if (plots.empty())
    return out +
           "set label 1 'no model has a value here' at graph 0.5,0.5 center\nplot NaN notitle\n";
  return out + "plot " + plots + "\n";
}

std::optional<std::string> draw_svg(const xy_chart& c, const std::string& dir) {
  return run_gnuplot(c.id, dir, gnuplot_data(c), gnuplot_script(c, c.id + ".dat", c.id + ".svg"));
}

}  // namespace calc
