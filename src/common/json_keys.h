// JSON read with every object's keys distinct. nlohmann keeps the last of a repeated key, so a
// config.json or a trace line giving "hidden_size" twice would be read with the second value and
// no word; calc refuses it, as its YAML reader refuses a key given twice.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace calc {

/// Parses `text` (throws nlohmann's parse_error as json::parse does); `repeated` is set to the
/// first key an object gives twice, and the document is then not fully read.
nlohmann::json parse_json_distinct(const std::string& text, std::optional<std::string>& repeated);

/// 1-based line of the second occurrence of "key" in `text` (1 when not found).
int line_of_repeat(const std::string& text, const std::string& key);

}  // namespace calc
