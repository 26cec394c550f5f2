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

std::string with_commas(std::int64_t v) {
  std::string digits = int128_to_string(v);
  bool neg = digits[0] == '-';
  if (neg) digits.erase(digits.begin());
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it, ++n) {
    if (n > 0 && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
  }
  return neg ? "-" + out : out;
}

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

namespace {

bool ends_with(const std::string& s, const std::string& tail) { return s.ends_with(tail); }

std::string cell(const std::string& key, const ojson& v) {
  if (v.is_null()) return "—";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) {
    std::int64_t i = v.get<std::int64_t>();
    std::string exact = with_commas(i);
    if (ends_with(key, "bytes") && (i >= 1024 || i <= -1024))
      return exact + " B (" + human_bytes(i) + ")";
    if (ends_with(key, "bytes")) return exact + " B";
    if (key.find("flops") != std::string::npos && i >= 1'000'000)
      return exact + " (" + human_flops(i) + ")";
    if (key.find("params") != std::string::npos && i >= 1'000'000)
      return exact + " (" + trim(round_half_even(i, 1'000'000'000, 3)) + " B)";
    return exact;
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e18)
      return cell(key, ojson(static_cast<std::int64_t>(d)));
    if (std::fabs(d) >= 1) return trim(fmt::format("{:.3f}", d));
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

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

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
  std::string out = fmt::format("## {}\n\n| quantity | value |\n|---|---|\n", title);
  for (const auto& [k, v] : scalars) {
    std::string leaf = k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1);
    out += fmt::format("| {} | {} |\n", label(k), cell(leaf, v));
  }
  for (const auto& [k, v] : result.items())
    if (is_table(v)) out += md_table(k, v);
  return out;
}

}  // namespace calc
