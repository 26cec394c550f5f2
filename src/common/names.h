// Catalogue names as users type them: case-insensitive lookup and ranked suggestions
// (`H100` -> h100-sxm, h100-pcie), shared by the model and GPU catalogues.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace calc {

/// Levenshtein distance: insertions, deletions and substitutions that turn `a` into `b`.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// ASCII lower case ("Qwen3-8B" -> "qwen3-8b").
std::string lower(std::string text);

/// The entry of `known` equal to `word` ignoring case, if any.
std::optional<std::string> find_ignoring_case(const std::string& word,
                                              const std::vector<std::string>& known);

/// Names of `known` the user may have meant, best first (at most four): every name that starts
/// with `word` (ignoring case); else the names sharing the longest common prefix of at least
/// three characters, or the same family (the part before the first '-'); else the closest by edit
/// distance when it is near enough to be a typo. Empty when nothing is close.
std::vector<std::string> suggest(const std::string& word, const std::vector<std::string>& known);

/// " (did you mean 'a' or 'b'?)", or "" when there is no suggestion.
std::string did_you_mean(const std::vector<std::string>& suggestions);

}  // namespace calc
