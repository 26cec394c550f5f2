#include "common/error.h"

#include <fmt/format.h>

namespace calc {

namespace {

/// The message is one line whatever the input held: control characters (a newline in a key or a
/// path) are shown escaped, \n, \t or \xNN.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

std::string located(const source_location& where, const std::string& field,
                    const std::string& message) {
  std::string prefix = where.file;
  if (where.line > 0) prefix += fmt::format(":{}:{}", where.line, where.column);
  if (!field.empty()) return one_line(fmt::format("{}: {}: {}", prefix, field, message));
  return one_line(fmt::format("{}: {}", prefix, message));
}
}  // namespace

spec_error::spec_error(const source_location& where, const std::string& field,
                       const std::string& message)
    : std::runtime_error(located(where, field, message)), field_(field), message_(message) {}

spec_error::spec_error(const std::string& field, const std::string& message)
    : std::runtime_error(one_line(field.empty() ? message : fmt::format("{}: {}", field, message))),
      field_(field),
      message_(message) {}

}  // namespace calc
