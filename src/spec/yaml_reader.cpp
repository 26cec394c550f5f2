#include "spec/yaml_reader.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "common/limits.h"
#include "common/names.h"

namespace calc {

source_location location_of(const YAML::Node& node, const std::string& file) {
  YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  // Only nodes written by --set have no position in a file.
  if (mark.is_null() || mark.line < 0) return {"--set", 0, 0};
  return {file, mark.line + 1, mark.column + 1};
}

std::string key_text(const YAML::Node& key, const std::string& path, const std::string& file) {
  if (!key.IsScalar())
    throw spec_error(location_of(key, file), path.empty() ? "(document)" : path,
                     "a field name must be a plain word");
  return key.Scalar();
}

namespace {

/// Counts nodes (aliases expanded) and depth while walking a document; see check_document.
/// The dotted path of a node is spelled only when an error names it: building it for every node
/// of every file was a tenth of `calc check`'s time.
struct document_walk {
  /// One step of the path from the root: a mapping key or a sequence index.
  struct step {
    const step* parent;
    const std::string* key;  // null for a sequence item
    std::size_t index;
  };

  const std::string& file;
  std::int64_t nodes = 0;

  static std::string path_of(const step* at) {
    std::vector<const step*> steps;
    for (; at != nullptr; at = at->parent) steps.push_back(at);
    std::string path;
    for (auto it = steps.rbegin(); it != steps.rend() && path.size() <= 80; ++it) {
      if ((*it)->key == nullptr)
        path += fmt::format("[{}]", (*it)->index);
      else
        path += (path.empty() ? "" : ".") + *(*it)->key;
    }
    if (path.size() > 80) path = path.substr(0, 80) + "...";  // a recursive path never ends
    return path.empty() ? "(document)" : path;
  }

  void visit(const YAML::Node& n, int depth, const step* at) {
    if (++nodes > limits::yaml_nodes)
      throw spec_error(location_of(n, file), path_of(at),
                       fmt::format("more than {} YAML nodes with aliases expanded (the limit)",
                                   limits::yaml_nodes));
    if (!n.IsMap() && !n.IsSequence()) return;
    if (depth >= limits::yaml_depth)
      throw spec_error(location_of(n, file), path_of(at),
                       fmt::format("nested deeper than {} levels (the limit; a recursive alias?)",
                                   limits::yaml_depth));
    if (n.IsSequence()) {
      std::size_t i = 0;
      for (const auto& item : n) {
        step item_step{at, nullptr, i++};
        visit(item, depth + 1, &item_step);
      }
      return;
    }
    // Keys seen so far, as views of the document's own strings; a set only for large mappings
    // (most have a handful of keys, where a scan beats allocating a hash set per mapping).
    std::vector<std::string_view> seen;
    std::unordered_set<std::string_view> seen_set;
    auto first_time = [&](std::string_view key) {
      if (seen.size() < 16) {
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) return false;
        seen.push_back(key);
        if (seen.size() == 16) seen_set.insert(seen.begin(), seen.end());
        return true;
      }
      return seen_set.insert(key).second;
    };
    static const std::string no_key;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string& key = it->first.IsScalar() ? it->first.Scalar() : no_key;
      step key_step{at, &key, 0};
      if (it->first.IsScalar() && !first_time(key))
        throw spec_error(location_of(it->first, file), path_of(&key_step),
                         "given twice in one mapping (the first would be silently ignored)");
      visit(it->first, depth + 1, &key_step);
      visit(it->second, depth + 1, &key_step);
    }
  }
};

/// Records where each document of a stream starts (and nothing else).
struct document_starts : YAML::EventHandler {
  std::vector<YAML::Mark> marks;
  void OnDocumentStart(const YAML::Mark& m) override { marks.push_back(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

/// False when the text cannot hold a second document, so the second parse that looks for one is
/// skipped (it doubled the cost of reading every file). A further document in a YAML stream
/// starts only after a document marker, `---` or `...`, at the start of a line (after a byte
/// order mark, if any): these markers end
/// even a block or quoted scalar, so text without one at column 0 holds at most one document.
bool may_hold_second_document(const std::string& text) {
  for (std::size_t at = 0; at < text.size();) {
    if (text.compare(at, 3, "\xEF\xBB\xBF") == 0) at += 3;  // a byte order mark may lead a line
    if (text.compare(at, 3, "---") == 0 || text.compare(at, 3, "...") == 0) return true;
    at = text.find_first_of("\r\n", at);  // YAML breaks lines at CR, LF and CRLF
    if (at == std::string::npos) break;
    ++at;
  }
  return false;
}

/// Parses one document; a syntax error, no document or a second document is a located error.
/// yaml-cpp 0.7's LoadAll never returns on some malformed input (each further document starts
/// at the same mark, forever, until memory runs out), so at most two documents are looked at and
/// a second one that starts where the first did is text the parser cannot consume.
YAML::Node parse_document(const std::string& text, const std::string& file) {
  YAML::Node doc;
  document_starts starts;
  try {
    doc = YAML::Load(text);
    if (may_hold_second_document(text)) {
      std::istringstream in(text);
      YAML::Parser parser(in);
      if (parser.HandleNextDocument(starts)) parser.HandleNextDocument(starts);
    }
  } catch (const YAML::ParserException& e) {
    throw spec_error(source_location{file, e.mark.line + 1, e.mark.column + 1}, "",
                     fmt::format("malformed YAML: {}", e.msg));
  }
  if (starts.marks.size() > 1) {
    const YAML::Mark& second = starts.marks[1];
    source_location at{file, second.line + 1, second.column + 1};
    if (second.pos <= starts.marks[0].pos)
      throw spec_error(at, "", "malformed YAML: text the parser cannot read here");
    throw spec_error(at, "(document)", "a second YAML document ('---'); a file holds one");
  }
  if (doc.IsNull() && doc.Mark().is_null())
    throw spec_error(source_location{file, 0, 0}, "(document)",
                     "the file is empty; expected a mapping of fields");
  check_document(doc, file);
  return doc;
}

}  // namespace

void check_document(const YAML::Node& root, const std::string& file) {
  document_walk{file}.visit(root, 0, nullptr);
}

YAML::Node load_yaml_file(const std::string& path) {
  namespace fs = std::filesystem;
  const source_location at{path, 0, 0};
  if (static_cast<std::int64_t>(path.size()) > limits::path_chars)
    throw spec_error(source_location{path.substr(0, 64) + "...", 0, 0}, "",
                     fmt::format("a path of {} characters is longer than the limit of {}",
                                 path.size(), limits::path_chars));
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw spec_error(at, "", "is a folder, not a YAML file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw spec_error(at, "", fmt::format("cannot open file ({})", std::strerror(errno)));
  // Read in chunks, stopping one chunk past the limit, so /dev/zero or a huge file is refused,
  // not slurped, and a small file costs no more than its size.
  std::string text;
  try {
    char chunk[1 << 16];
    while (in && static_cast<std::int64_t>(text.size()) <= limits::file_bytes) {
      in.read(chunk, sizeof chunk);
      text.append(chunk, static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) throw std::ios_base::failure("read");
  } catch (const std::exception&) {
    throw spec_error(at, "", fmt::format("cannot read file ({})", std::strerror(errno)));
  }
  if (static_cast<std::int64_t>(text.size()) > limits::file_bytes)
    throw spec_error(at, "",
                     fmt::format("larger than the limit of {} MiB", limits::file_bytes >> 20));
  return load_yaml_text(text, path);
}

YAML::Node load_yaml_text(const std::string& text, const std::string& file) {
  return parse_document(text, file);
}

namespace {

/// A copy without source marks, so errors in what --set wrote are located at "--set".
YAML::Node unmarked(const YAML::Node& n) {
  if (n.IsScalar()) return YAML::Node(n.Scalar());
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& item : n) out.push_back(unmarked(item));
    return out;
  }
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (auto it = n.begin(); it != n.end(); ++it)
      out[key_text(it->first, "--set", "--set")] = unmarked(it->second);
    return out;
  }
  return YAML::Node();
}

/// The entry of a list that `key` names for --set: its 0-based index, else the entry whose
/// `name` is `key` (components.vision_tower.layers); an error naming --set otherwise.
YAML::Node list_entry(const YAML::Node& list, const std::string& key, const std::string& path,
                      const std::string& walked) {
  if (!key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
        return std::isdigit(c) != 0;
      })) {
    std::size_t index = key.size() > 9 ? list.size() : std::stoul(key);
    if (index < list.size()) return list[index];
    throw spec_error("--set " + path, fmt::format("'{}' has {} entries, no entry {}", walked,
                                                  list.size(), key));
  }
  for (const YAML::Node& e : list)
    if (e.IsMap() && e["name"].IsScalar() && e["name"].Scalar() == key) return e;
  throw spec_error("--set " + path,
                   fmt::format("'{}' has no entry named '{}' (give its name or its index)",
                               walked, key));
}

}  // namespace

void apply_set(YAML::Node& root, const std::string& assignment, const std::string& file) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw spec_error("--set", fmt::format("'{}' is not key.path=value", assignment));
  if (!root.IsMap())
    throw spec_error(location_of(root, file), "(document)",
                     "expected a mapping of fields (--set has nothing to change)");
  std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    YAML::Node parsed = YAML::Load(assignment.substr(eq + 1));
    check_document(parsed, "--set " + path);  // before unmarked() copies it, aliases expanded
    value = unmarked(parsed);
  } catch (const YAML::ParserException& e) {
    throw spec_error("--set " + path, fmt::format("malformed value: {}", e.msg));
  }
  std::vector<std::string> keys;
  std::string key;
  for (char c : path) {
    if (c == '.') {
      keys.push_back(key);
      key.clear();
    } else {
      key += c;
    }
  }
  keys.push_back(key);
  YAML::Node cur = root;
  std::string walked;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + keys[i];
    // A missing mapping is created: the strict reader then rejects it if it is no schema field.
    if (!cur[keys[i]].IsDefined()) cur[keys[i]] = YAML::Node(YAML::NodeType::Map);
    YAML::Node next = cur[keys[i]];
    if (next.IsSequence() && i + 2 < keys.size()) {
      // A list of named entries (`components`): the next key is an entry's index or its name.
      next.reset(list_entry(next, keys[i + 1], path, walked));
      walked += "." + keys[++i];
    } else if (next.IsSequence()) {
      // `components.0=3`: an entry is a mapping of fields, set one at a time.
      throw spec_error("--set " + path,
                       fmt::format("'{0}' is a list: --set takes a field of one entry, "
                                   "{0}.INDEX.FIELD or {0}.NAME.FIELD",
                                   walked));
    }
    if (!next.IsMap())
      throw spec_error("--set " + path, fmt::format("'{}' is not a mapping in the model", walked));
    cur.reset(next);
  }
  cur[keys.back()] = value;
}

std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& known) {
  std::optional<std::string> best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& k : known) {
    std::size_t d = edit_distance(word, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  // A typo changes a few characters; anything further is a different word.
  if (best && best_d <= std::max<std::size_t>(2, word.size() / 3)) return best;
  return std::nullopt;
}

std::int64_t read_integer(const YAML::Node& node, const std::string& field, const std::string& file,
                          std::int64_t min) {
  if (!node.IsScalar()) throw spec_error(location_of(node, file), field, "expected an integer");
  std::int64_t v = 0;
  const std::string& s = node.Scalar();
  try {
    std::size_t used = 0;
    long long parsed = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    v = parsed;
  } catch (const std::logic_error&) {
    throw spec_error(location_of(node, file), field,
                     fmt::format("expected an integer, got '{}'", s));
  }
  if (v < min) {
    std::string bound = min == 1 ? "must be positive" : fmt::format("must be at least {}", min);
    throw spec_error(location_of(node, file), field, fmt::format("{}, got {}", bound, v));
  }
  return v;
}

yaml_map::yaml_map(const YAML::Node& node, std::string path, std::string file)
    : node_(node), path_(std::move(path)), file_(std::move(file)) {
  if (!node_.IsMap())
    throw spec_error(location_of(node_, file_), path_.empty() ? "(document)" : path_,
                     "expected a mapping of fields");
  entries_.reserve(node_.size());
  for (auto it = node_.begin(); it != node_.end(); ++it)
    entries_.push_back({it->first, it->second, it->first.IsScalar() ? it->first.Scalar() : "",
                        false});
}

// Keys are unique (check_document rejects a key given twice), so the first match is the one.
const yaml_map::entry* yaml_map::find(const std::string& key) const {
  for (const entry& e : entries_)
    if (e.key.IsScalar() && e.text == key) return &e;
  return nullptr;
}

yaml_map::entry* yaml_map::find(const std::string& key) {
  return const_cast<entry*>(std::as_const(*this).find(key));
}

bool yaml_map::has(const std::string& key) const { return find(key) != nullptr; }

std::string yaml_map::path_of(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

YAML::Node yaml_map::required(const std::string& key) {
  entry* e = find(key);
  if (!e) {
    // A misspelt key is the likely cause: report the typo where it is, not the absence.
    for (const entry& other : entries_) {
      std::string text = key_text(other.key, path_, file_);
      if (text != key && !other.used && closest(text, {key}))
        throw spec_error(location_of(other.key, file_), path_of(text),
                         fmt::format("unknown field (did you mean '{}'?)", key));
    }
    throw spec_error(where(), path_of(key), "missing required field");
  }
  const YAML::Node& n = e->value;
  // A null that --set wrote (`--set hidden=`) is located at --set, one in the file at its map.
  if (n.IsNull())
    throw spec_error(n.Mark().is_null() ? location_of(n, file_) : where(), path_of(key),
                     "missing required field");
  e->used = true;
  return n;
}

YAML::Node yaml_map::optional(const std::string& key) {
  entry* e = find(key);
  if (!e) {
    defaulted_.push_back(path_of(key));
    return YAML::Node(YAML::NodeType::Undefined);
  }
  e->used = true;
  return e->value;
}

std::int64_t yaml_map::integer(const std::string& key, std::int64_t min) {
  return read_integer(required(key), path_of(key), file_, min);
}

std::optional<std::int64_t> yaml_map::optional_integer(const std::string& key, std::int64_t min) {
  YAML::Node n = optional(key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  return read_integer(n, path_of(key), file_, min);
}

bool yaml_map::boolean(const std::string& key, bool fallback) {
  YAML::Node n = optional(key);
  if (!n.IsDefined()) return fallback;
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  throw spec_error(location_of(n, file_), path_of(key), "expected true or false");
}

std::string yaml_map::text(const std::string& key) {
  YAML::Node n = required(key);
  if (!n.IsScalar()) throw spec_error(location_of(n, file_), path_of(key), "expected a string");
  return n.Scalar();
}

std::optional<std::string> yaml_map::optional_text(const std::string& key) {
  YAML::Node n = optional(key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  if (!n.IsScalar()) throw spec_error(location_of(n, file_), path_of(key), "expected a string");
  return n.Scalar();
}

yaml_map yaml_map::map(const std::string& key) { return {required(key), path_of(key), file_}; }

void yaml_map::fail(const std::string& key, const std::string& message) const {
  const entry* e = find(key);
  throw spec_error(e ? location_of(e->value, file_) : where(), path_of(key), message);
}

void yaml_map::finish(const std::vector<std::string>& known) const {
  for (const entry& e : entries_) {
    std::string key = key_text(e.key, path_, file_);
    if (e.used) continue;
    std::string message = "unknown field";
    if (auto guess = closest(key, known)) message += fmt::format(" (did you mean '{}'?)", *guess);
    throw spec_error(location_of(e.key, file_), path_of(key), message);
  }
}

}  // namespace calc
