// What each value of a command's JSON result measures, declared once per command beside the
// command table, so Markdown prints it in its unit without reading the unit from a key's
// spelling (report/format.h renders from these).
#pragma once

#include <string_view>

#include "report/format.h"

namespace calc::cli {

/// The units of a command's result values; empty for a command that declares none (its numbers
/// print as plain counts).
const unit_map& units_of(std::string_view command);

}  // namespace calc::cli
