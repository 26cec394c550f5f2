#include "common/units.h"

#include <cctype>
#include <map>

namespace calc {

std::optional<std::int64_t> parse_bytes(const std::string& text) {
  static const std::map<std::string, std::int64_t> scale = {
      {"", 1},    {"B", 1},   {"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}, {"TiB", TiB},
      {"KB", KB}, {"kB", KB}, {"MB", MB},   {"GB", GB},   {"TB", TB},
  };
  // Split into a decimal number (digits with at most one point) and a unit.
  std::size_t i = 0;
  std::int64_t whole = 0, frac = 0, frac_den = 1;
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
      if (frac_den > 1'000'000'000 || whole > 1'000'000'000'000'000) return std::nullopt;
      if (point) {
        frac = frac * 10 + (c - '0');
        frac_den *= 10;
      } else {
        whole = whole * 10 + (c - '0');
      }
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) return std::nullopt;
  while (i < text.size() && text[i] == ' ') ++i;
  auto unit = scale.find(text.substr(i));
  if (unit == scale.end()) return std::nullopt;
  try {
    checked total = checked(whole) * unit->second;
    checked part = checked(frac) * unit->second;
    if (part.value() % frac_den != 0) return std::nullopt;  // not a whole number of bytes
    return (total + part / frac_den).value();
  } catch (const overflow_error&) {
    return std::nullopt;
  }
}

namespace {

/// The power of 1024 a token-count suffix names (K = 1024), or 0 for no valid suffix.
std::int64_t token_scale(const std::string& suffix) {
  if (suffix.empty()) return 1;
  if (suffix.size() != 1) return 0;
  switch (suffix[0]) {
    case 'k':
    case 'K':
      return KiB;
    case 'm':
    case 'M':
      return MiB;
    case 'g':
    case 'G':
      return GiB;
    default:
      return 0;
  }
}

std::size_t digits_end(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

}  // namespace

bool looks_like_token_count(const std::string& text) {
  std::size_t i = digits_end(text);
  return i > 0 && token_scale(text.substr(i)) != 0;
}

std::optional<std::int64_t> parse_token_count(const std::string& text) {
  if (!looks_like_token_count(text)) return std::nullopt;
  std::size_t i = digits_end(text);
  std::int64_t value = 0;
  for (std::size_t k = 0; k < i; ++k) {
    int digit = text[k] - '0';
    if (value > ((1LL << 62) - digit) / 10) return std::nullopt;  // checked before it overflows
    value = value * 10 + digit;
  }
  std::int64_t scale = token_scale(text.substr(i));
  if (value > (1LL << 62) / scale) return std::nullopt;
  return value * scale;
}

}  // namespace calc
