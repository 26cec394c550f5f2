// Errors that calc reports to the user. Library code throws; only src/cli/ catches and prints.
#pragma once

#include <stdexcept>
#include <string>

namespace calc {

/// Where a value came from: a file (or "--set", "<string>") with a 1-based line and column.
struct source_location {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
};

/// Bad input: a malformed or impossible spec, an unknown field, a bad option value.
/// what() is the one line the CLI prints: `file:line:col: field.path: message`.
class spec_error : public std::runtime_error {
 public:
  spec_error(const source_location& where, const std::string& field, const std::string& message);
  /// An input error without a file position (e.g. a command-line option).
  spec_error(const std::string& field, const std::string& message);

  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  std::string field_;
  std::string message_;
};

}  // namespace calc
