#include "spec/hf/hf_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/json_keys.h"

namespace calc::hf {

namespace {

/// Records the start of every value of a (valid) JSON text by pointer. The text was already
/// accepted by nlohmann/json, so the scan only has to skip strings, numbers and literals.
class position_scan {
 public:
  position_scan(const std::string& text, std::map<std::string, std::pair<int, int>>& out)
      : t_(text), out_(out) {
    for (std::size_t i = 0; i < t_.size(); ++i)
      if (t_[i] == '\n') line_starts_.push_back(i + 1);
  }

  void run() {
    skip_ws();
    value("");
  }

 private:
  void skip_ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t'))
      ++p_;
  }
  std::pair<int, int> here() const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), p_);
    std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());  // 1-based
    return {static_cast<int>(line), static_cast<int>(p_ - line_starts_[line - 1] + 1)};
  }
  std::string string_token() {
    std::string s;
    ++p_;  // opening quote
    while (p_ < t_.size() && t_[p_] != '"') {
      if (t_[p_] == '\\') ++p_;
      if (p_ < t_.size()) s += t_[p_++];
    }
    ++p_;  // closing quote
    return s;
  }
  void value(const std::string& pointer) {
    out_[pointer] = here();
    if (p_ >= t_.size()) return;
    char c = t_[p_];
    if (c == '{') {
      ++p_;
      skip_ws();
      while (p_ < t_.size() && t_[p_] != '}') {
        std::string key = string_token();
        skip_ws();
        ++p_;  // ':'
        skip_ws();
        value(pointer + "/" + key);
        skip_ws();
        if (p_ < t_.size() && t_[p_] == ',') ++p_;
        skip_ws();
      }
      ++p_;
    } else if (c == '[') {
      ++p_;
      skip_ws();
      for (int i = 0; p_ < t_.size() && t_[p_] != ']'; ++i) {
        value(fmt::format("{}/{}", pointer, i));
        skip_ws();
        if (p_ < t_.size() && t_[p_] == ',') ++p_;
        skip_ws();
      }
      ++p_;
    } else if (c == '"') {
      string_token();
    } else {
      while (p_ < t_.size() && t_[p_] != ',' && t_[p_] != '}' && t_[p_] != ']' && t_[p_] != ' ' &&
             t_[p_] != '\n' && t_[p_] != '\r' && t_[p_] != '\t')
        ++p_;
    }
  }

  const std::string& t_;
  std::map<std::string, std::pair<int, int>>& out_;
  std::vector<std::size_t> line_starts_ = {0};
  std::size_t p_ = 0;
};

std::string type_name(const nlohmann::json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  return "null";
}

/// Python's json module writes Infinity, -Infinity and NaN (Nemotron-H's time_step_limit), which
/// JSON does not allow. They are read as null, padded to the same length so positions hold.
std::string without_python_numbers(const std::string& text) {
  std::string out = text;
  bool in_string = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      std::string w = word;
      if (out.compare(i, w.size(), w) == 0) {
        std::string repl = "null";
        repl.resize(std::max(w.size(), repl.size()), ' ');
        out.replace(i, w.size(), repl);
        i += repl.size() - 1;
        break;
      }
    }
  }
  return out;
}

}  // namespace

hf_json hf_json::parse(const std::string& text, const std::string& file) {
  hf_json doc;
  doc.file_ = file;
  std::optional<std::string> repeated;
  try {
    doc.root_ = parse_json_distinct(without_python_numbers(text), repeated);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped.
    int line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    if (auto cut = what.find("syntax error"); cut != std::string::npos) what = what.substr(cut);
    throw spec_error(source_location{file, line, column}, "", "malformed JSON: " + what);
  }
  if (repeated)
    throw spec_error(source_location{file, line_of_repeat(text, *repeated), 1}, *repeated,
                     "given twice in one object; the first would be silently ignored");
  if (!doc.root_.is_object())
    throw spec_error(source_location{file, 1, 1}, "", "a config.json must be a JSON object");
  doc.text_ = text;
  return doc;
}

hf_json hf_json::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw spec_error(source_location{path, 0, 0}, "", "cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

source_location hf_json::where(const std::string& pointer) const {
  if (!positions_) position_scan(text_, positions_.emplace()).run();
  auto it = positions_->find(pointer);
  if (it == positions_->end()) return {file_, 1, 1};
  return {file_, it->second.first, it->second.second};
}

hf_object::hf_object(const hf_json& doc, std::string pointer)
    : doc_(&doc), pointer_(std::move(pointer)) {
  node_ = &doc.root().at(nlohmann::json::json_pointer(pointer_));
}

bool hf_object::has(const std::string& key) const {
  auto it = node_->find(key);
  return it != node_->end() && !it->is_null();
}

bool hf_object::is_null(const std::string& key) const {
  auto it = node_->find(key);
  return it != node_->end() && it->is_null();
}

const nlohmann::json& hf_object::value(const std::string& key) const {
  if (!has(key)) fail(key, "missing required field");
  return node_->at(key);
}

std::string hf_object::path_of(const std::string& key) const {
  std::string path = pointer_.empty() ? "" : pointer_.substr(1);
  std::replace(path.begin(), path.end(), '/', '.');
  return path.empty() ? key : path + "." + key;
}

source_location hf_object::where(const std::string& key) const {
  return doc_->where(pointer_ + "/" + key);
}

void hf_object::fail(const std::string& key, const std::string& message) const {
  throw spec_error(has(key) || node_->contains(key) ? where(key) : doc_->where(pointer_),
                   path_of(key), message);
}

std::int64_t hf_object::integer(const std::string& key) const {
  const nlohmann::json& v = value(key);
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d < 9e15 && std::floor(d) == d) return static_cast<std::int64_t>(d);
  }
  fail(key, fmt::format("expected a non-negative integer, got {}", v.dump()));
}

bool hf_object::boolean(const std::string& key) const {
  const nlohmann::json& v = value(key);
  if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", type_name(v)));
  return v.get<bool>();
}

std::string hf_object::text(const std::string& key) const {
  const nlohmann::json& v = value(key);
  if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", type_name(v)));
  return v.get<std::string>();
}

std::vector<std::int64_t> hf_object::integers(const std::string& key) const {
  const nlohmann::json& v = value(key);
  if (!v.is_array()) fail(key, fmt::format("expected a list of integers, got {}", type_name(v)));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0)
      throw spec_error(doc_->where(fmt::format("{}/{}/{}", pointer_, key, i)),
                       fmt::format("{}[{}]", path_of(key), i), "expected a non-negative integer");
    out.push_back(v[i].get<std::int64_t>());
  }
  return out;
}

hf_object hf_object::object(const std::string& key) const {
  const nlohmann::json& v = value(key);
  if (!v.is_object()) fail(key, fmt::format("expected an object, got {}", type_name(v)));
  return hf_object(*doc_, pointer_ + "/" + key);
}

}  // namespace calc::hf
