// A Hugging Face config.json read once, with the file position of every value.
//
// nlohmann/json parses the document; a small scan of the same text records where each value
// starts (by JSON pointer), so every error names file:line:col and the field path, like the
// YAML reader's. Nothing after src/spec/hf/ sees a json value.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace calc::hf {

/// A parsed config.json and the location of each of its values.
class hf_json {
 public:
  /// Reads and parses a file; a missing file or a syntax error is a located spec_error.
  static hf_json load(const std::string& path);
  /// Parses text (tests); `file` names it in errors.
  static hf_json parse(const std::string& text, const std::string& file);

  const nlohmann::json& root() const { return root_; }
  const std::string& file() const { return file_; }
  /// Where the value at a JSON pointer ("/text_config/head_dim") starts; the document start when
  /// the pointer names no value.
  source_location where(const std::string& pointer) const;

 private:
  nlohmann::json root_;
  std::string file_;
  std::string text_;  // scanned for positions only when an error needs one
  // pointer -> (line, column), 1-based; filled on the first where()
  mutable std::optional<std::map<std::string, std::pair<int, int>>> positions_;
};

/// One object of a config (the document, or a nested one such as text_config): typed reads of
/// its fields, each error located at the field with its dotted path ("text_config.head_dim").
class hf_object {
 public:
  hf_object(const hf_json& doc, std::string pointer);

  /// True when the field is present and not null.
  bool has(const std::string& key) const;
  /// True when the field is present with the value null (q_lora_rank: null = no compression).
  bool is_null(const std::string& key) const;
  const nlohmann::json& value(const std::string& key) const;
  /// The dotted field path of a key, e.g. "linear_attn_config.kda_layers".
  std::string path_of(const std::string& key) const;
  source_location where(const std::string& key) const;
  /// A non-negative integer field (an integral float such as 128.0 is accepted).
  std::int64_t integer(const std::string& key) const;
  bool boolean(const std::string& key) const;
  std::string text(const std::string& key) const;
  /// A list of non-negative integers.
  std::vector<std::int64_t> integers(const std::string& key) const;
  /// A nested object.
  hf_object object(const std::string& key) const;
  const hf_json& doc() const { return *doc_; }
  const std::string& pointer() const { return pointer_; }

  /// Raises a located error about one field.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const hf_json* doc_;
  std::string pointer_;
  const nlohmann::json* node_;
};

}  // namespace calc::hf
