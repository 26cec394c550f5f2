#include "report/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <vector>

namespace calc {

namespace {

/// Trims trailing zeros after the point ("1.250" -> "1.25", "2.000" -> "2").
std::string trim(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

/// Drops spaces at both ends.
std::string trim_space(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  std::size_t i = s.find_first_not_of(' ');
  return i == std::string::npos ? "" : s.substr(i);
}

}  // namespace

namespace {
constexpr std::int64_t MB_ = 1'000'000, GB_ = 1'000'000'000, TB_ = 1'000'000'000'000;
}  // namespace

std::string human_bytes(std::int64_t bytes) {
  struct scale {
    std::int64_t size;
    const char* name;
  };
  static const scale units[] = {
      {1LL << 40, "TiB"}, {1LL << 30, "GiB"}, {1LL << 20, "MiB"}, {1LL << 10, "KiB"}};
  std::int64_t mag = bytes < 0 ? -bytes : bytes;
  for (const scale& u : units)
    if (mag >= u.size) return trim(round_half_even(bytes, u.size, 3)) + " " + u.name;
  return fmt::format("{} B", bytes);
}

std::string human_flops(std::int64_t flops) {
  struct scale {
    std::int64_t size;
    const char* name;
  };
  static const scale units[] = {{1'000'000'000'000'000'000LL, "EFLOPs"},
                                {1'000'000'000'000'000LL, "PFLOPs"},
                                {1'000'000'000'000LL, "TFLOPs"},
                                {1'000'000'000LL, "GFLOPs"},
                                {1'000'000LL, "MFLOPs"}};
  std::int64_t mag = flops < 0 ? -flops : flops;
  for (const scale& u : units)
    if (mag >= u.size) return trim(round_half_even(flops, u.size, 3)) + " " + u.name;
  return fmt::format("{} FLOPs", flops);
}

std::string human_decimal_bytes(std::int64_t bytes) {
  if (bytes >= TB_) return trim(round_half_even(bytes, TB_, 2)) + " TB";
  if (bytes >= GB_) return trim(round_half_even(bytes, GB_, 1)) + " GB";
  if (bytes >= MB_) return trim(round_half_even(bytes, MB_, 1)) + " MB";
  return with_commas(bytes) + " B";
}

std::string human_rate(std::int64_t bytes_per_s) {
  if (bytes_per_s >= TB_) return trim(round_half_even(bytes_per_s, TB_, 2)) + " TB/s";
  if (bytes_per_s >= GB_) return trim(round_half_even(bytes_per_s, GB_, 1)) + " GB/s";
  return trim(round_half_even(bytes_per_s, MB_, 1)) + " MB/s";
}

namespace {

/// A fractional value with thousands separators, never scientific: 12345.679 -> "12,345.679",
/// 0.00012 -> "0.00012".
std::string decimal(double d) {
  if (!std::isfinite(d)) return "—";
  if (d != 0 && std::fabs(d) < 1) {
    int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(std::fabs(d)))), 3, 12);
    return trim(fmt::format("{:.{}f}", d, decimals));
  }
  std::string text = trim(fmt::format("{:.3f}", d));
  std::size_t point = text.find('.');
  std::string whole = text.substr(0, point);
  std::string rest = point == std::string::npos ? "" : text.substr(point);
  if (whole.size() > 15) return text;
  return with_commas(std::stoll(whole)) + rest;
}

}  // namespace

std::string human_tokens(std::int64_t tokens) {
  // Context lengths are spoken in powers of two (128K = 131,072 tokens); any other count is
  // printed as given, so 128,000 never reads as "125K".
  bool power_of_two = tokens > 0 && (tokens & (tokens - 1)) == 0;
  if (power_of_two && tokens >= (1LL << 20)) return fmt::format("{}M", tokens >> 20);
  if (power_of_two && tokens >= (1LL << 10)) return fmt::format("{}K", tokens >> 10);
  return with_commas(tokens);
}

std::string human_params(std::int64_t params) {
  std::int64_t mag = params < 0 ? -params : params;
  if (mag >= 1'000'000'000'000)
    return trim(round_half_even(params, 1'000'000'000'000, 3)) + " T params";
  if (mag >= 1'000'000'000) return trim(round_half_even(params, 1'000'000'000, 3)) + " B params";
  if (mag >= 1'000'000) return trim(round_half_even(params, 1'000'000, 3)) + " M params";
  return with_commas(params) + " params";
}

std::string human_seconds(double s) {
  if (s >= 1) return trim(fmt::format("{:.3f}", s)) + " s";
  if (s >= 1e-3) return trim(fmt::format("{:.3f}", s * 1e3)) + " ms";
  return trim(fmt::format("{:.3f}", s * 1e6)) + " µs";
}

std::string time_unit(const std::vector<double>& seconds) {
  // The unit that leaves fewest times awkward to read: below 1 ("0.0047 s") or with five
  // digits or more before the point ("135,026 µs"); on a tie, the larger unit.
  static const std::pair<const char*, double> units[] = {{"s", 1}, {"ms", 1e3}, {"µs", 1e6}};
  const char* best = "s";
  std::size_t fewest = SIZE_MAX;
  for (const auto& [name, scale] : units) {
    std::size_t awkward = 0;
    for (double s : seconds) {
      double v = std::fabs(s) * scale;
      if (std::isfinite(v) && v != 0 && (v < 1 || v >= 1e4)) ++awkward;
    }
    if (awkward < fewest) {
      fewest = awkward;
      best = name;
    }
  }
  return best;
}

std::string seconds_in(double s, const std::string& unit) {
  double v = unit == "s" ? s : unit == "ms" ? s * 1e3 : s * 1e6;
  // Four significant digits are plenty for a time: no decimals from 1,000 on.
  if (std::fabs(v) >= 1000)
    return with_commas(static_cast<std::int64_t>(std::llround(v))) + " " + unit;
  return decimal(v) + " " + unit;
}

std::string short_source(const std::string& text) {
  // The sites cited, in order, once each: "https://www.x.com/a/b" -> "x.com".
  std::vector<std::string> hosts;
  std::size_t at = 0;
  while ((at = text.find("://", at)) != std::string::npos) {
    at += 3;
    std::size_t end = text.find_first_of("/ ),;:", at);
    std::string host = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (host.starts_with("www.")) host.erase(0, 4);
    if (host.starts_with("m.")) host.erase(0, 2);
    if (!host.empty() && std::find(hosts.begin(), hosts.end(), host) == hosts.end())
      hosts.push_back(host);
  }
  std::string out;
  for (const std::string& h : hosts) out += (out.empty() ? "" : ", ") + h;
  if (!out.empty()) return out;
  // No URL: the document named first ("NVIDIA A30 datasheet (2021)"), cut at its first clause.
  std::size_t cut = text.find_first_of(":;(");
  std::string first = trim_space(text.substr(0, cut));
  return first.size() > 60 ? first.substr(0, 57) + "..." : first;
}

// ---- units ----------------------------------------------------------------------------------

unit_map::unit_map(std::initializer_list<std::pair<unit, std::vector<std::string>>> groups) {
  for (const auto& [u, paths] : groups)
    for (const std::string& p : paths) of[p] = u;
}

const unit* unit_map::find(const std::string& path) const {
  if (auto it = of.find(path); it != of.end()) return &it->second;
  std::size_t dot = path.rfind('.');
  if (dot == std::string::npos) return nullptr;
  if (auto it = of.find(path.substr(0, dot) + ".*"); it != of.end()) return &it->second;
  return nullptr;
}

namespace {

/// A fractional byte count (an average per token) in the unit of its whole part.
std::string fractional_bytes(double d) {
  if (std::fabs(d) < 1024) return decimal(d) + " B";
  std::string whole = human_bytes(static_cast<std::int64_t>(d));
  std::string name = whole.substr(whole.find(' '));
  double scale = name == " KiB"   ? 1024.0
                 : name == " MiB" ? 1048576.0
                 : name == " GiB" ? 1073741824.0
                                  : 1099511627776.0;
  return trim(fmt::format("{:.3f}", d / scale)) + name;
}

/// True when a string holds an exact count past 64 bits as exact() writes it.
bool wide_digits(const std::string& t) {
  return t.size() >= 19 &&
         t.find_first_not_of("0123456789", t[0] == '-' ? 1 : 0) == std::string::npos;
}

/// A cell whose value is a time: left for the table to put in its one unit.
bool is_time(const unit* u) {
  return u != nullptr &&
         (*u == unit::seconds || *u == unit::milliseconds || *u == unit::microseconds);
}

double to_seconds(const unit* u, const ojson& v) {
  double d = v.get<double>();
  return *u == unit::milliseconds ? d / 1e3 : *u == unit::microseconds ? d / 1e6 : d;
}

/// One value in its declared unit (`time` is the table's time unit for a time).
std::string cell(const unit* u, const ojson& v, const std::string& time) {
  if (v.is_null()) return "—";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + cell(u, e, time);
    return s;
  }
  if (v.is_object()) return v.dump();
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (u != nullptr && *u == unit::source) return short_source(t);
    if (u == nullptr || !wide_digits(t)) return t;
    // An exact count past 64 bits (exact() writes it as a string): in the largest unit, as a
    // 64-bit count prints (9.3e20 FLOPs as "934.795 EFLOPs", not 21 digits), rounded from the
    // exact value; other units grouped.
    int128 wide = 0;
    for (char c : t)
      if (c != '-') wide = wide * 10 + (c - '0');
    if (t[0] == '-') wide = -wide;
    auto scaled = [&](std::initializer_list<std::pair<int128, const char*>> ladder) {
      int128 mag = wide < 0 ? -wide : wide;
      for (const auto& [size, name] : ladder)
        if (mag >= size) return trim(round_half_even(wide, size, 3)) + " " + name;
      return group_digits(t);
    };
    const int128 exa = 1'000'000'000'000'000'000LL;
    switch (*u) {
      case unit::bytes:
        return scaled(
            {{int128(1) << 80, "YiB"}, {int128(1) << 70, "ZiB"}, {int128(1) << 60, "EiB"}});
      case unit::bytes_as_sold:
        return group_digits(t) + " B";
      case unit::flops:
        return scaled({{exa * 1'000'000, "YFLOPs"}, {exa * 1'000, "ZFLOPs"}, {exa, "EFLOPs"}});
      case unit::params:
        return group_digits(t) + " params";
      default:
        return group_digits(t);
    }
  }
  if (is_time(u)) return seconds_in(to_seconds(u, v), time);
  if (u != nullptr && *u == unit::tflops) {
    double d = v.get<double>();
    return d == 0 ? "—" : decimal(d);
  }
  if (u != nullptr && *u == unit::error_measure) {
    // Errors near zero, and the enormous ones of a failed check, are read by their exponent;
    // 4 significant digits otherwise.
    double d = v.get<double>();
    bool exponent = d != 0 && (std::fabs(d) < 1e-3 || std::fabs(d) >= 1e6);
    return exponent ? fmt::format("{:.4g}", d) : decimal(d);
  }
  bool whole = v.is_number_integer() || (std::floor(v.get<double>()) == v.get<double>() &&
                                         std::fabs(v.get<double>()) < 9e18);
  if (whole) {
    std::int64_t i =
        v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(v.get<double>());
    if (u == nullptr) return with_commas(i);
    switch (*u) {
      case unit::bytes:
        return human_bytes(i);
      case unit::bytes_as_sold:
        return human_decimal_bytes(i);
      case unit::rate:
        return human_rate(i);
      case unit::flops:
        return human_flops(i);
      case unit::params:
        return human_params(i);
      case unit::tokens:
        return human_tokens(i);
      default:
        return with_commas(i);
    }
  }
  double d = v.get<double>();
  if (u != nullptr && *u == unit::bytes) return fractional_bytes(d);
  return decimal(d);
}

/// A key as a column or row label; a time's unit suffix goes, since each cell prints its unit.
std::string label(std::string key, const unit* u = nullptr) {
  if (is_time(u)) {
    for (const char* suffix : {"_ms", "_us", "_s"})
      if (key.ends_with(suffix) && key.size() > std::string(suffix).size()) {
        key.resize(key.size() - std::string(suffix).size());
        break;
      }
  }
  for (char& c : key)
    if (c == '_') c = ' ';
  return key;
}

bool is_table(const ojson& v) { return v.is_array() && !v.empty() && v.front().is_object(); }

/// Display width of UTF-8 text (µ, —, × count once).
std::size_t width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad(const std::string& s, std::size_t w, align a) {
  std::string fill(w > width(s) ? w - width(s) : 0, ' ');
  return a == align::right ? fill + s : s + fill;
}

bool numeric_looking(const std::string& s) {
  if (s.empty() || s == "—") return true;
  unsigned char c = static_cast<unsigned char>(s[0]);
  return std::isdigit(c) || (s.size() > 1 && (c == '-' || c == '<') && std::isdigit(s[1]));
}

/// Every time of a table in seconds, to pick its one unit.
void collect_times(const unit* u, const ojson& v, std::vector<double>& out) {
  if (!is_time(u)) return;
  if (v.is_array()) {
    for (const auto& e : v) collect_times(u, e, out);
  } else if (v.is_number()) {
    out.push_back(to_seconds(u, v));
  }
}

std::string md_table(const std::string& name, const ojson& rows, const unit_map& units) {
  std::vector<std::string> cols;
  for (const auto& row : rows)
    for (const auto& [k, v] : row.items())
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
  std::vector<const unit*> col_units;
  std::vector<double> times;
  for (const auto& c : cols) col_units.push_back(units.find(name + "." + c));
  for (const auto& row : rows)
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (row.contains(cols[i])) collect_times(col_units[i], row[cols[i]], times);
  std::string time = time_unit(times);
  std::vector<std::string> head;
  for (std::size_t i = 0; i < cols.size(); ++i) head.push_back(label(cols[i], col_units[i]));
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows) {
    std::vector<std::string> line;
    for (std::size_t i = 0; i < cols.size(); ++i)
      line.push_back(row.contains(cols[i]) ? cell(col_units[i], row[cols[i]], time) : "");
    cells.push_back(line);
  }
  return fmt::format("\n### {}\n\n", label(name)) + aligned_table(head, cells);
}

}  // namespace

std::string aligned_table(const std::vector<std::string>& head,
                          const std::vector<std::vector<std::string>>& rows,
                          std::vector<align> aligns) {
  std::size_t n = head.size();
  std::vector<std::size_t> w(n, 3);  // "---" at least
  for (std::size_t i = 0; i < n; ++i) w[i] = std::max(w[i], width(head[i]));
  for (const auto& r : rows)
    for (std::size_t i = 0; i < n && i < r.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  for (std::size_t i = aligns.size(); i < n; ++i) {
    bool numbers = !rows.empty();
    for (const auto& r : rows)
      if (i < r.size() && !numeric_looking(r[i])) numbers = false;
    aligns.push_back(numbers ? align::right : align::left);
  }
  std::string out = "|";
  for (std::size_t i = 0; i < n; ++i) out += " " + pad(head[i], w[i], aligns[i]) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < n; ++i)
    out += aligns[i] == align::right ? std::string(w[i] + 1, '-') + ":|"
                                     : std::string(w[i] + 2, '-') + "|";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (std::size_t i = 0; i < n; ++i)
      out += " " + pad(i < r.size() ? r[i] : "", w[i], aligns[i]) + " |";
    out += "\n";
  }
  return out;
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

std::string csv_value(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_escape(v.get<std::string>());
  if (v.is_array()) {  // plain values only reach here: tables become sections
    std::string s;
    for (const auto& e : v)
      s += (s.empty() ? "" : ";") + (e.is_string() ? e.get<std::string>()
                                     : e.is_null() ? std::string()
                                                   : e.dump());
    return csv_escape(s);
  }
  return csv_escape(v.dump());
}

/// A map of records (e.g. by_component) repeats a table in another shape: JSON keeps it for
/// stable pointers, Markdown and CSV leave it out.
bool is_index(const ojson& v) {
  if (!v.is_object() || v.empty()) return false;
  for (const auto& [k, x] : v.items())
    if (!x.is_object()) return false;
  return true;
}

void flatten(const std::string& prefix, const ojson& obj,
             std::vector<std::pair<std::string, ojson>>& out) {
  for (const auto& [k, v] : obj.items()) {
    std::string key = prefix.empty() ? k : prefix + "." + k;
    if (is_index(v)) continue;
    if (v.is_object()) {
      flatten(key, v, out);
    } else if (!is_table(v)) {
      out.emplace_back(key, v);
    }
  }
}

/// A table's rows with nested objects flattened to dotted columns, in first-seen column order.
void table_rows(const ojson& rows, std::vector<std::string>& cols,
                std::vector<std::vector<std::pair<std::string, ojson>>>& out) {
  for (const auto& row : rows) {
    std::vector<std::pair<std::string, ojson>> flat;
    flatten("", row, flat);
    for (const auto& [c, x] : flat)
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    out.push_back(std::move(flat));
  }
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out + "\n";
}

}  // namespace

std::string tidy_csv(const ojson& result) {
  std::vector<std::pair<std::string, ojson>> scalars;
  flatten("", result, scalars);
  std::vector<std::string> tables;
  for (const auto& [k, v] : result.items())
    if (is_table(v)) tables.push_back(k);
  std::vector<std::string> scalar_head, scalar_row;
  for (const auto& [k, v] : scalars) {
    scalar_head.push_back(csv_escape(k));
    scalar_row.push_back(csv_value(v));
  }
  auto section = [&](const std::string& name, bool with_scalars) {
    std::vector<std::string> cols;
    std::vector<std::vector<std::pair<std::string, ojson>>> rows;
    table_rows(result[name], cols, rows);
    std::vector<std::string> head = with_scalars ? scalar_head : std::vector<std::string>{};
    // A column named like a single value (state's per_token_bytes) is named by its table too,
    // so every header is unique.
    for (const auto& c : cols) {
      bool taken = with_scalars && std::any_of(scalars.begin(), scalars.end(),
                                               [&](const auto& kv) { return kv.first == c; });
      head.push_back(csv_escape(taken ? name + "." + c : c));
    }
    std::string out = csv_line(head);
    for (const auto& flat : rows) {
      std::vector<std::string> line = with_scalars ? scalar_row : std::vector<std::string>{};
      for (const auto& c : cols) {
        auto it =
            std::find_if(flat.begin(), flat.end(), [&](const auto& p) { return p.first == c; });
        line.push_back(it == flat.end() ? "" : csv_value(it->second));
      }
      out += csv_line(line);
    }
    return out;
  };
  // One table: the tidy form itself, the single values repeated on each row.
  if (tables.size() == 1) return section(tables.front(), true);
  std::string out = scalars.empty() ? "" : csv_line(scalar_head) + csv_line(scalar_row);
  for (const std::string& t : tables)
    out += (out.empty() ? "" : "\n") + ("# " + t + "\n") + section(t, false);
  return out;
}

std::string markdown_table(const std::string& name, const ojson& rows, const unit_map& units) {
  return md_table(name, rows, units);
}

std::string render(const ojson& result, output_format format, const std::string& title,
                   const unit_map& units) {
  if (format == output_format::json) return result.dump(2) + "\n";
  if (format == output_format::csv) return tidy_csv(result);
  std::vector<std::pair<std::string, ojson>> scalars;
  flatten("", result, scalars);
  std::string out = fmt::format("## {}\n", title);
  std::vector<double> times;
  for (const auto& [k, v] : scalars) collect_times(units.find(k), v, times);
  std::string time = time_unit(times);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> shown;  // printed values, for distinct_rows
  std::vector<std::string> shown_labels, left_out;
  for (const auto& [k, v] : scalars) {
    const unit* u = units.find(k);
    std::string value = cell(u, v, time);
    if (units.distinct_rows && !v.is_string()) {
      auto same = std::find(shown.begin(), shown.end(), value);
      if (same != shown.end()) {
        left_out.push_back(label(k, u) + " = " + shown_labels[same - shown.begin()]);
        continue;
      }
      shown.push_back(value);
      shown_labels.push_back(label(k, u));
    }
    rows.push_back({label(k, u), value});
  }
  if (!rows.empty())
    out += "\n" + aligned_table({"quantity", "value"}, rows, {align::left, align::left});
  if (!left_out.empty()) {
    std::string names;
    for (const std::string& n : left_out) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format("\nNot shown, equal to a row above: {} (`--format json` has every key).\n",
                       names);
  }
  for (const auto& [k, v] : result.items())
    if (is_table(v)) out += md_table(k, v, units);
  return out;
}

}  // namespace calc
