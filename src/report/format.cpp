#include "report/format.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace calc {

namespace {

std::string int128_to_string(int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  __extension__ unsigned __int128 u =
      neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u > 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

/// Trims trailing zeros after the point ("1.250" -> "1.25", "2.000" -> "2").
std::string trim(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

ojson exact(const checked& v) {
  if (v.fits_int64()) return v.value();
  return int128_to_string(v.wide());
}

namespace {

/// Digits with a comma every three from the right: "-1234567" -> "-1,234,567".
std::string group_digits(std::string digits) {
  bool neg = !digits.empty() && digits[0] == '-';
  if (neg) digits.erase(digits.begin());
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it, ++n) {
    if (n > 0 && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
  }
  return neg ? "-" + out : out;
}

}  // namespace

std::string with_commas(std::int64_t v) { return group_digits(int128_to_string(v)); }

std::string round_half_even(int128 num, int128 den, int decimals) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  bool neg = num < 0;
  if (neg) num = -num;
  int128 scale = 1, scaled = 0;
  for (int i = 0; i < decimals; ++i)
    if (__builtin_mul_overflow(scale, 10, &scale))
      throw overflow_error(fmt::format("rounding to {} decimals exceeds 128 bits", decimals));
  if (__builtin_mul_overflow(num, scale, &scaled))
    throw overflow_error(fmt::format("rounding to {} decimals exceeds 128 bits", decimals));
  int128 q = scaled / den, r = scaled % den;
  if (2 * r > den || (2 * r == den && q % 2 == 1)) ++q;
  std::string digits = int128_to_string(q);
  if (decimals > 0) {
    while (static_cast<int>(digits.size()) <= decimals) digits.insert(digits.begin(), '0');
    digits.insert(digits.end() - decimals, '.');
  }
  return (neg && q != 0 ? "-" : "") + digits;
}

namespace {
constexpr std::int64_t MB_ = 1'000'000, GB_ = 1'000'000'000, TB_ = 1'000'000'000'000;
}  // namespace

std::string human_bytes(std::int64_t bytes) {
  struct unit {
    std::int64_t size;
    const char* name;
  };
  static const unit units[] = {
      {1LL << 40, "TiB"}, {1LL << 30, "GiB"}, {1LL << 20, "MiB"}, {1LL << 10, "KiB"}};
  std::int64_t mag = bytes < 0 ? -bytes : bytes;
  for (const unit& u : units)
    if (mag >= u.size) return trim(round_half_even(bytes, u.size, 3)) + " " + u.name;
  return fmt::format("{} B", bytes);
}

std::string human_flops(std::int64_t flops) {
  struct unit {
    std::int64_t size;
    const char* name;
  };
  static const unit units[] = {{1'000'000'000'000'000LL, "PFLOPs"},
                               {1'000'000'000'000LL, "TFLOPs"},
                               {1'000'000'000LL, "GFLOPs"},
                               {1'000'000LL, "MFLOPs"}};
  std::int64_t mag = flops < 0 ? -flops : flops;
  for (const unit& u : units)
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

std::string human_tokens(std::int64_t tokens) {
  // Context lengths are spoken in powers of two: 128K = 131,072 tokens.
  if (tokens > 0 && tokens % (1LL << 20) == 0) return fmt::format("{}M", tokens >> 20);
  if (tokens > 0 && tokens % (1LL << 10) == 0) return fmt::format("{}K", tokens >> 10);
  return with_commas(tokens);
}

std::string human_params(std::int64_t params) {
  std::int64_t mag = params < 0 ? -params : params;
  if (mag >= 1'000'000'000) return trim(round_half_even(params, 1'000'000'000, 3)) + " B";
  if (mag >= 1'000'000) return trim(round_half_even(params, 1'000'000, 3)) + " M";
  return with_commas(params);
}

std::string human_seconds(double s) {
  if (s >= 1) return trim(fmt::format("{:.3f}", s)) + " s";
  if (s >= 1e-3) return trim(fmt::format("{:.3f}", s * 1e3)) + " ms";
  return trim(fmt::format("{:.3f}", s * 1e6)) + " µs";
}

namespace {

bool ends_with(const std::string& s, const std::string& tail) { return s.ends_with(tail); }

/// A fractional value with thousands separators: 12345.679 -> "12,345.679".
std::string decimal(double d) {
  std::string text = trim(fmt::format("{:.3f}", d));
  std::size_t point = text.find('.');
  std::string whole = text.substr(0, point);
  std::string rest = point == std::string::npos ? "" : text.substr(point);
  if (whole.size() > 15) return text;
  return with_commas(std::stoll(whole)) + rest;
}

/// Keys whose integer value is a token count a reader says with K/M (context lengths).
bool is_length_key(const std::string& key) {
  for (const char* k : {"length", "context", "prompt", "cached", "max_tokens", "page_tokens",
                        "shared_prefix", "budget_length"})
    if (key == k) return true;
  return false;
}

/// Bytes by their key: card memory and bandwidth decimal (as sold), the rest binary.
std::string bytes_cell(const std::string& key, std::int64_t i) {
  if (ends_with(key, "bandwidth_bytes") || ends_with(key, "interconnect_bytes"))
    return human_rate(i);
  if (key == "memory_bytes") return human_decimal_bytes(i);
  return human_bytes(i);
}

std::string cell(const std::string& key, const ojson& v) {
  if (v.is_null()) return "—";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) {
    // An exact count past 64 bits (exact() writes it as a string under a count's key) is
    // grouped, with its unit; free text that happens to be digits is left as written.
    const std::string& t = v.get_ref<const std::string&>();
    bool digits = t.size() >= 19 && t.find_first_not_of("0123456789", t[0] == '-' ? 1 : 0) ==
                                        std::string::npos;
    if (digits && ends_with(key, "bytes")) return group_digits(t) + " B";
    if (digits && key.find("flops") != std::string::npos) return group_digits(t) + " FLOPs";
    if (digits && (key.find("params") != std::string::npos || ends_with(key, "tokens")))
      return group_digits(t);
    return t;
  }
  if (v.is_number() && ends_with(key, "tflops")) {  // a vendor peak, already in TFLOPs
    double d = v.get<double>();
    return d == 0 ? "—" : decimal(d);
  }
  if (v.is_number_integer()) {
    std::int64_t i = v.get<std::int64_t>();
    if (ends_with(key, "bytes")) return bytes_cell(key, i);
    if (key.find("flops") != std::string::npos) return human_flops(i);
    if (key.find("params") != std::string::npos) return human_params(i);
    if (is_length_key(key)) return human_tokens(i);
    return with_commas(i);
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e18)
      return cell(key, ojson(static_cast<std::int64_t>(d)));
    if (ends_with(key, "bytes") && std::fabs(d) >= 1024) {
      // A fractional byte count (an average per token): the unit of its whole part.
      std::string whole = human_bytes(static_cast<std::int64_t>(d));
      std::string unit = whole.substr(whole.find(' '));
      double scale = unit == " KiB"   ? 1024.0
                     : unit == " MiB" ? 1048576.0
                     : unit == " GiB" ? 1073741824.0
                                      : 1099511627776.0;
      return trim(fmt::format("{:.3f}", d / scale)) + unit;
    }
    if (ends_with(key, "bytes")) return decimal(d) + " B";
    if (std::fabs(d) >= 1) return decimal(d);
    return fmt::format("{:.4g}", d);
  }
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + cell(key, e);
    return s;
  }
  return v.dump();
}

std::string label(std::string key) {
  for (char& c : key)
    if (c == '_') c = ' ';
  return key;
}

bool is_table(const ojson& v) { return v.is_array() && !v.empty() && v.front().is_object(); }

std::string md_table(const std::string& name, const ojson& rows) {
  std::vector<std::string> cols;
  for (const auto& row : rows)
    for (const auto& [k, v] : row.items())
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
  std::string out = fmt::format("\n### {}\n\n|", label(name));
  for (const auto& c : cols) out += " " + label(c) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < cols.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const auto& c : cols) out += " " + (row.contains(c) ? cell(c, row[c]) : "") + " |";
    out += "\n";
  }
  return out;
}

}  // namespace

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

std::string csv_value(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_escape(v.get<std::string>());
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

}  // namespace

std::string markdown_table(const std::string& name, const ojson& rows) {
  return md_table(name, rows);
}

std::string render(const ojson& result, output_format format, const std::string& title) {
  if (format == output_format::json) return result.dump(2) + "\n";
  std::vector<std::pair<std::string, ojson>> scalars;
  flatten("", result, scalars);
  if (format == output_format::csv) {
    std::string out = "key,value\n";
    for (const auto& [k, v] : scalars) out += csv_escape(k) + "," + csv_value(v) + "\n";
    for (const auto& [k, v] : result.items()) {
      if (!is_table(v)) continue;
      std::vector<std::string> cols;
      for (const auto& row : v)
        for (const auto& [c, x] : row.items())
          if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
      out += "\n" + csv_escape(k);
      for (const auto& c : cols) out += "," + csv_escape(c);
      out += "\n";
      for (const auto& row : v) {
        out += csv_escape(k);
        for (const auto& c : cols) out += "," + (row.contains(c) ? csv_value(row[c]) : "");
        out += "\n";
      }
    }
    return out;
  }
  std::string out = fmt::format("## {}\n", title);
  if (!scalars.empty()) out += "\n| quantity | value |\n|---|---|\n";
  for (const auto& [k, v] : scalars) {
    // The unit comes from the leaf key, or from its parent (stage_flops.layers is FLOPs).
    std::string leaf = k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
    std::string parent = k.find('.') == std::string::npos ? "" : k.substr(0, k.find('.'));
    bool leaf_unit = leaf.ends_with("bytes") || leaf.find("flops") != std::string::npos ||
                     leaf.find("params") != std::string::npos;
    out += fmt::format("| {} | {} |\n", label(k),
                       cell(leaf_unit || parent.empty() ? leaf : parent + "." + leaf, v));
  }
  for (const auto& [k, v] : result.items())
    if (is_table(v)) out += md_table(k, v);
  return out;
}

}  // namespace calc
