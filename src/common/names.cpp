#include "common/names.h"

#include <algorithm>
#include <cctype>

namespace calc {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

namespace {

std::size_t common_prefix(const std::string& a, const std::string& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

std::string family(const std::string& name) { return name.substr(0, name.find('-')); }

constexpr std::size_t kMaxSuggestions = 4;

}  // namespace

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<std::string> find_ignoring_case(const std::string& word,
                                              const std::vector<std::string>& known) {
  std::string w = lower(word);
  for (const std::string& k : known)
    if (lower(k) == w) return k;
  return std::nullopt;
}

std::vector<std::string> suggest(const std::string& word, const std::vector<std::string>& known) {
  std::string w = lower(word);
  struct scored {
    std::string name;
    std::size_t prefix;    // characters shared at the start
    std::size_t distance;  // edit distance
  };
  std::vector<scored> all;
  for (const std::string& k : known) {
    std::string l = lower(k);
    all.push_back({k, common_prefix(w, l), edit_distance(w, l)});
  }
  // Longest shared prefix first, then the nearest spelling, then the name.
  std::sort(all.begin(), all.end(), [](const scored& a, const scored& b) {
    if (a.prefix != b.prefix) return a.prefix > b.prefix;
    if (a.distance != b.distance) return a.distance < b.distance;
    return a.name < b.name;
  });
  std::vector<std::string> out;
  auto take = [&](auto keep) {
    for (const scored& s : all)
      if (out.size() < kMaxSuggestions && keep(s)) out.push_back(s.name);
  };
  // 1. The word is the start of a name: `h100` names h100-sxm and h100-pcie.
  take([&](const scored& s) { return !w.empty() && s.prefix == w.size(); });
  if (!out.empty()) return out;
  // 2. The longest shared start, when it says more than a letter or two (`qwen3-8c`).
  if (!all.empty() && all.front().prefix >= 3) {
    std::size_t best = all.front().prefix;
    take([&](const scored& s) { return s.prefix == best; });
    return out;
  }
  // 3. The same family (`rtx 4090` -> rtx-4090), nearest spelling first.
  std::vector<scored> by_distance = all;
  std::stable_sort(by_distance.begin(), by_distance.end(),
                   [](const scored& a, const scored& b) { return a.distance < b.distance; });
  for (const scored& s : by_distance)
    if (out.size() < kMaxSuggestions && family(lower(s.name)) == family(w) && !family(w).empty())
      out.push_back(s.name);
  if (!out.empty()) return out;
  // 4. A typo: a few characters changed.
  if (!by_distance.empty() &&
      by_distance.front().distance <= std::max<std::size_t>(2, w.size() / 3))
    out.push_back(by_distance.front().name);
  return out;
}

std::string did_you_mean(const std::vector<std::string>& suggestions) {
  if (suggestions.empty()) return "";
  std::string out = " (did you mean ";
  for (std::size_t i = 0; i < suggestions.size(); ++i) {
    if (i > 0) out += i + 1 == suggestions.size() ? " or " : ", ";
    out += "'" + suggestions[i] + "'";
  }
  return out + "?)";
}

}  // namespace calc
