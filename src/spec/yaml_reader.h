// Strict reading of YAML mappings: every key must be known, every value of the right type.
//
// A yaml_map wraps one mapping with its field path ("layers.attention") and the file it came
// from. Each read marks the key as used; finish() rejects any key left over, suggesting the
// closest known key. Every error is a spec_error located at the offending node.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace calc {

/// The location of a node in its file (1-based); "--set" for a node that a --set wrote.
source_location location_of(const YAML::Node& node, const std::string& file);

/// The text of a mapping key; a key that is not a plain scalar is a located spec_error.
std::string key_text(const YAML::Node& key, const std::string& path, const std::string& file);

/// Loads a YAML file; a missing, unreadable or oversized file, a syntax error, an empty file,
/// a second document or a document past the limits (check_document) is a located spec_error.
YAML::Node load_yaml_file(const std::string& path);

/// Parses YAML text that names `file` in its errors, with the checks of load_yaml_file.
YAML::Node load_yaml_text(const std::string& text, const std::string& file);

/// Rejects a document deeper than limits::yaml_depth (a recursive alias never ends), larger than
/// limits::yaml_nodes with aliases expanded (an alias bomb), or with a key given twice (located
/// at the second occurrence: readers would silently take the first).
void check_document(const YAML::Node& root, const std::string& file);

/// Applies `key.path=value` to a loaded document (value parsed as YAML), for what-if questions.
/// Missing mappings on the path are created; a key that is no schema field is caught later by
/// the strict reader, as an unknown field located at "--set". `file` names the document in the
/// error when it is not a mapping.
void apply_set(YAML::Node& root, const std::string& assignment, const std::string& file = "");

/// The closest of `known` to `word` by edit distance, if it is close enough to be a typo.
std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& known);

class yaml_map {
 public:
  yaml_map(const YAML::Node& node, std::string path, std::string file);

  bool has(const std::string& key) const;
  /// The field path of a key under this map, e.g. "layers.attention.kv_heads".
  std::string path_of(const std::string& key) const;
  const std::string& file() const { return file_; }
  source_location where() const { return location_of(node_, file_); }

  /// The node of a required key (error if missing); marks it used.
  YAML::Node required(const std::string& key);
  /// The node of an optional key, or an undefined node; marks it used.
  YAML::Node optional(const std::string& key);

  std::int64_t integer(const std::string& key, std::int64_t min = 1);
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min = 1);
  bool boolean(const std::string& key, bool fallback);
  std::string text(const std::string& key);
  std::optional<std::string> optional_text(const std::string& key);
  yaml_map map(const std::string& key);

  /// Raises a located error about one key of this map.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  /// Rejects keys that no read used. `known` lists every accepted key, for suggestions.
  void finish(const std::vector<std::string>& known) const;

  /// Keys that were absent and took their default, as field paths.
  const std::vector<std::string>& defaulted() const { return defaulted_; }

 private:
  /// One key of the mapping, read once: yaml-cpp's own lookup (node[key]) builds a node for
  /// every key it compares, which made reading the fields of a model most of its cost.
  struct entry {
    YAML::Node key;
    YAML::Node value;
    std::string text;     // the key's text; empty and never matched when it is not a scalar
    bool used = false;
  };
  entry* find(const std::string& key);
  const entry* find(const std::string& key) const;

  YAML::Node node_;
  std::vector<entry> entries_;
  std::string path_;
  std::string file_;
  std::vector<std::string> defaulted_;
};

/// Reads an integer scalar, with a located error naming `field` when it is not one or is < min.
std::int64_t read_integer(const YAML::Node& node, const std::string& field, const std::string& file,
                          std::int64_t min);

}  // namespace calc
