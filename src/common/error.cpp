#include "common/error.h"

#include <fmt/format.h>

namespace calc {

namespace {
std::string located(const source_location& where, const std::string& field,
                    const std::string& message) {
  std::string prefix = where.file;
  if (where.line > 0) prefix += fmt::format(":{}:{}", where.line, where.column);
  if (!field.empty()) return fmt::format("{}: {}: {}", prefix, field, message);
  return fmt::format("{}: {}", prefix, message);
}
}  // namespace

spec_error::spec_error(const source_location& where, const std::string& field,
                       const std::string& message)
    : std::runtime_error(located(where, field, message)), field_(field), message_(message) {}

spec_error::spec_error(const std::string& field, const std::string& message)
    : std::runtime_error(field.empty() ? message : fmt::format("{}: {}", field, message)),
      field_(field),
      message_(message) {}

}  // namespace calc
