#include "check/check.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "common/limits.h"
#include "common/numbers.h"
#include "spec/yaml_reader.h"

namespace calc {

namespace {

using fraction = std::pair<int128, int128>;

int128 gcd128(int128 a, int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

fraction reduce(fraction f) {
  if (f.second < 0) f = {-f.first, -f.second};
  int128 g = gcd128(f.first, f.second);
  if (g > 1) f = {f.first / g, f.second / g};
  return f;
}

fraction mul_checked(int128 a, int128 b, int128 c, int128 d) {
  int128 n, m;
  if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(c, d, &m))
    throw std::overflow_error("fraction overflow");
  return reduce({n, m});
}

fraction add(fraction x, fraction y, int sign) {
  int128 a, b, den;
  if (__builtin_mul_overflow(x.first, y.second, &a) ||
      __builtin_mul_overflow(y.first, x.second, &b) ||
      __builtin_mul_overflow(x.second, y.second, &den))
    throw std::overflow_error("fraction overflow");
  int128 num;
  if (sign > 0 ? __builtin_add_overflow(a, b, &num) : __builtin_sub_overflow(a, b, &num))
    throw std::overflow_error("fraction overflow");
  return reduce({num, den});
}

fraction from_json(const nlohmann::ordered_json& v, const std::string& pointer) {
  if (v.is_number_integer()) return {v.get<std::int64_t>(), 1};
  if (v.is_string()) {
    // Counts past 2^63 arrive as decimal strings.
    const std::string digits = v.get<std::string>();
    bool numeric = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == '-';
    });
    if (numeric) {
      int128 n = 0;
      for (char c : digits)
        if (c != '-' &&
            (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, c - '0', &n)))
          throw std::overflow_error(fmt::format("field {} exceeds 128 bits", pointer));
      return {digits[0] == '-' ? -n : n, 1};
    }
  }
  if (v.is_number_float()) {
    // Fractional results (averages, ratios) are exact to far more digits than any printed claim.
    double d = v.get<double>();
    return reduce({static_cast<int128>(std::llround(d * 1e9)), 1'000'000'000});
  }
  throw std::runtime_error(fmt::format("field {} is not a number ({})", pointer, v.dump()));
}

/// Recursive-descent evaluation of + - * / over JSON pointers, numbers and parentheses.
class expression {
 public:
  expression(const nlohmann::ordered_json& doc, const std::string& text) : doc_(doc), s_(text) {}

  fraction parse() {
    fraction v = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected text");
    return v;
  }

 private:
  const nlohmann::ordered_json& doc_;
  const std::string& s_;
  std::size_t i_ = 0;
  int depth_ = 0;  // open parentheses, at most limits::expression_depth

  [[noreturn]] void fail(const std::string& what) {
    std::string shown = s_.size() > 60 ? s_.substr(0, 60) + "..." : s_;  // one readable line
    throw std::runtime_error(fmt::format("field '{}': {} at column {}", shown, what, i_ + 1));
  }
  void skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  bool is_operator_slash() const {
    return s_[i_] == '/' && (i_ + 1 == s_.size() || s_[i_ + 1] == ' ');
  }
  fraction sum() {
    fraction v = product();
    for (;;) {
      skip();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) {
        int sign = s_[i_++] == '+' ? 1 : -1;
        v = add(v, product(), sign);
      } else {
        return v;
      }
    }
  }
  fraction product() {
    fraction v = atom();
    for (;;) {
      skip();
      if (i_ < s_.size() && s_[i_] == '*') {
        ++i_;
        fraction w = atom();
        v = mul_checked(v.first, w.first, v.second, w.second);
      } else if (i_ < s_.size() && is_operator_slash()) {
        ++i_;
        fraction w = atom();
        if (w.first == 0) fail("division by zero");
        v = mul_checked(v.first, w.second, v.second, w.first);
      } else {
        return v;
      }
    }
  }
  fraction atom() {
    skip();
    if (i_ >= s_.size()) fail("expected a value");
    if (s_[i_] == '(') {
      ++i_;
      if (++depth_ > limits::expression_depth)
        fail(fmt::format("parentheses nested deeper than the limit of {}",
                         limits::expression_depth));
      fraction v = sum();
      --depth_;
      skip();
      if (i_ >= s_.size() || s_[i_] != ')') fail("expected ')'");
      ++i_;
      return v;
    }
    if (s_[i_] == '/') {
      std::size_t start = i_;
      while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != ')') ++i_;
      std::string pointer = s_.substr(start, i_ - start);
      nlohmann::ordered_json::json_pointer p(pointer);
      if (!doc_.contains(p))
        throw std::runtime_error(fmt::format("no field {} in the output", pointer));
      return from_json(doc_.at(p), pointer);
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      int128 v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])))
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_++] - '0', &v))
          fail("a number past 128 bits");
      return {v, 1};
    }
    fail("expected a JSON pointer, a number or '('");
  }
};

struct unit_scale {
  int128 num;  // a value in this unit is the raw value * den / num
  int128 den;
};

const std::map<std::string, unit_scale>& units() {
  static const std::map<std::string, unit_scale> u = {
      {"", {1, 1}},
      {"B", {1, 1}},
      {"KiB", {1LL << 10, 1}},
      {"MiB", {1LL << 20, 1}},
      {"GiB", {1LL << 30, 1}},
      {"TiB", {1LL << 40, 1}},
      {"KB", {1000, 1}},
      {"MB", {1'000'000, 1}},
      {"GB", {1'000'000'000, 1}},
      {"TB", {1'000'000'000'000, 1}},
      {"FLOPs", {1, 1}},
      {"MFLOPs", {1'000'000, 1}},
      {"GFLOPs", {1'000'000'000, 1}},
      {"TFLOPs", {1'000'000'000'000, 1}},
      {"PFLOPs", {1'000'000'000'000'000, 1}},
      {"thousand", {1000, 1}},
      {"million", {1'000'000, 1}},
      {"billion", {1'000'000'000, 1}},
      {"trillion", {1'000'000'000'000, 1}},
      {"%", {1, 100}},
      {"x", {1, 1}},
  };
  return u;
}

}  // namespace

std::vector<std::string> split_command(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) words.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

std::pair<int128, int128> evaluate_field(const nlohmann::ordered_json& doc,
                                         const std::string& field) {
  return expression(doc, field).parse();
}

std::pair<std::string, bool> compare_printed(int128 num, int128 den, const std::string& expect) {
  std::string text = expect;
  bool below = false;
  if (!text.empty() && text[0] == '<') {
    below = true;
    text.erase(text.begin());
  }
  // The printed number: digits, commas and at most one point.
  std::size_t i = 0;
  std::string digits;
  int decimals = -1;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
      if (decimals >= 0) ++decimals;
    } else if (c == ',') {
      continue;
    } else if (c == '.' && decimals < 0) {
      decimals = 0;
    } else {
      break;
    }
  }
  if (digits.empty())
    throw spec_error("expect", fmt::format("'{}' does not start with a number", expect));
  if (decimals < 0) decimals = 0;
  // Exact comparison scales by 10^decimals in 128 bits.
  if (decimals > limits::expect_decimals || digits.size() > 30)
    throw spec_error("expect",
                     fmt::format("'{}' has more than {} decimals or 30 digits (the limit)", expect,
                                 limits::expect_decimals));
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit = text.substr(i);
  auto u = units().find(unit);
  if (u == units().end()) {
    // Count nouns ("13 requests", "3168 tokens") carry no scale.
    bool word = !unit.empty() && std::all_of(unit.begin(), unit.end(), [](char c) {
      return std::isalpha(static_cast<unsigned char>(c)) || c == ' ' || c == '/' || c == '-';
    });
    if (!word) throw spec_error("expect", fmt::format("unknown unit '{}' in '{}'", unit, expect));
    u = units().find("");
  }
  // value in the printed unit = num/den * u.den / u.num
  int128 vn, vd;
  if (__builtin_mul_overflow(num, u->second.den, &vn) ||
      __builtin_mul_overflow(den, u->second.num, &vd))
    throw std::overflow_error("the value in the printed unit exceeds 128 bits");
  std::string got = round_half_even(vn, vd, decimals);
  std::string want;
  for (char c : text.substr(0, i))
    if (c != ',' && c != ' ') want += c;
  // Show the value as the chapter prints it: with thousands separators when it uses them.
  std::string grouped = got;
  if (expect.find(',') != std::string::npos) {
    std::size_t point = grouped.find('.');
    std::size_t end = point == std::string::npos ? grouped.size() : point;
    std::size_t begin = grouped[0] == '-' ? 1 : 0;
    for (std::size_t k = end; k > begin + 3; k -= 3) grouped.insert(k - 3, ",");
  }
  std::string shown = grouped + (unit.empty() ? "" : " " + unit);
  if (below) {
    // "<0.001": the exact value is below the printed bound.
    int128 bound_num = 0, bound_den = 1;
    for (char c : want) {
      if (c == '.') continue;
      bound_num = bound_num * 10 + (c - '0');
    }
    for (int k = 0; k < decimals; ++k) bound_den *= 10;
    int128 lhs, rhs;
    if (__builtin_mul_overflow(vn, bound_den, &lhs) || __builtin_mul_overflow(bound_num, vd, &rhs))
      throw std::overflow_error("the bound at its printed precision exceeds 128 bits");
    return {shown, lhs < rhs};
  }
  return {shown, got == want};
}

std::vector<claim> read_scenario_file(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  yaml_map top(root, "", path);
  YAML::Node list = top.required("claims");
  top.optional_text("title");
  top.finish({"claims", "title"});
  if (!list.IsSequence())
    throw spec_error(location_of(list, path), "claims", "expected a list of claims");
  std::vector<claim> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    yaml_map m(list[i], fmt::format("claims[{}]", i), path);
    claim c;
    c.file = path;
    c.location = m.where();
    c.id = m.text("id");
    c.where = m.optional_text("where").value_or("");
    c.run = m.text("run");
    c.field = m.text("field");
    c.expect = m.text("expect");
    if (m.has("over")) {
      yaml_map over = m.map("over");
      c.over_run = over.text("run");
      c.over_field = over.text("field");
      over.finish({"run", "field"});
    } else {
      m.optional("over");
    }
    auto status = m.optional_text("status").value_or("pass");
    if (status != "pass" && status != "open") m.fail("status", "expected pass or open");
    c.open = status == "open";
    c.analysis = m.optional_text("analysis").value_or("");
    if (c.open && c.analysis.empty()) m.fail("analysis", "an open claim needs its analysis");
    m.optional_text("note");
    m.finish({"id", "where", "run", "field", "expect", "over", "status", "analysis", "note"});
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

/// A path as an error message names it: whole when short, else its two ends and its length (a
/// 5,000-character path would otherwise fill the screen).
std::string path_for_message(const std::string& path) {
  if (path.size() <= 160) return path;
  return fmt::format("{}...{} ({} characters)", path.substr(0, 60), path.substr(path.size() - 60),
                     path.size());
}

/// The claims, refused when two share an id: the report names claims by id, and a second one
/// would pass or fail under the first one's name.
std::vector<claim> unique_claims(std::vector<claim> claims, const std::string& path) {
  std::map<std::string, const claim*> seen;
  for (const claim& c : claims) {
    auto [it, fresh] = seen.emplace(c.id, &c);
    if (!fresh)
      throw spec_error(c.location, "id",
                       fmt::format("'{}' is already the id of the claim at {}:{} (in {}); ids "
                                   "are unique",
                                   c.id, it->second->location.file, it->second->location.line,
                                   path_for_message(path)));
  }
  return claims;
}

}  // namespace

std::vector<claim> read_scenarios(const std::string& path) {
  namespace fs = std::filesystem;
  // Every file-system failure (no such file, a name too long, no permission) is bad input.
  auto fail = [&](const std::string& why) {
    return spec_error(source_location{path_for_message(path), 0, 0}, "", why);
  };
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw fail(ec.message());
  if (!fs::exists(status)) throw fail("no such file or folder");
  if (!fs::is_directory(status)) return unique_claims(read_scenario_file(path), path);
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(path, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".yaml")
      files.push_back(it->path().string());
  if (ec) throw fail(ec.message());
  std::sort(files.begin(), files.end());
  std::vector<claim> out;
  for (const auto& f : files) {
    auto part = read_scenario_file(f);
    out.insert(out.end(), part.begin(), part.end());
  }
  if (out.empty()) throw fail("no claims: the folder holds no scenario file (*.yaml) with a claim");
  return unique_claims(std::move(out), path);
}

std::optional<std::string> repository_root(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path at = fs::absolute(path, ec);
  if (ec) return std::nullopt;
  at = at.lexically_normal();
  if (!at.has_filename()) at = at.parent_path();  // "scenarios/" names the folder
  // The nearest ancestor (or the path itself) named `scenarios`: its parent is the root.
  for (fs::path p = at; !p.empty(); p = p.parent_path()) {
    if (p.filename() == "scenarios" && fs::is_directory(p, ec)) return p.parent_path().string();
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

std::vector<claim_result> run_claims(const std::vector<claim>& claims, const evaluator& eval) {
  std::map<std::string, nlohmann::ordered_json> outputs;
  std::map<std::string, std::string> failures;
  std::vector<claim_result> results;
  for (const claim& c : claims) {
    claim_result r;
    r.c = &c;
    try {
      auto output = [&](const std::string& run) -> const nlohmann::ordered_json& {
        if (!outputs.count(run) && !failures.count(run)) {
          try {
            std::vector<std::string> args = split_command(run);
            // A claim that ran `check` would run its own scenarios again, without end.
            if (!args.empty() && args.front() == "check")
              throw std::runtime_error("a claim cannot run `check` (it would run itself)");
            args.push_back("--format");
            args.push_back("json");
            outputs[run] = eval(args);
          } catch (const std::exception& e) {
            failures[run] = e.what();
          }
        }
        if (failures.count(run)) throw std::runtime_error(failures[run]);
        return outputs[run];
      };
      auto [num, den] = evaluate_field(output(c.run), c.field);
      if (!c.over_run.empty()) {
        auto [on, od] = evaluate_field(output(c.over_run), c.over_field);
        if (on == 0) throw std::runtime_error("division by zero in `over`");
        if (__builtin_mul_overflow(num, od, &num) || __builtin_mul_overflow(den, on, &den))
          throw std::overflow_error("the ratio to `over` exceeds 128 bits");
      }
      auto [got, pass] = compare_printed(num, den, c.expect);
      r.got = got;
      r.pass = pass;
    } catch (const std::exception& e) {
      r.error = e.what();
      r.got = "error";
      r.pass = false;
    }
    results.push_back(r);
  }
  return results;
}

}  // namespace calc
