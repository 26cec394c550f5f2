// The `calc report` document: a Markdown page a person reads (summary, compact tables in human
// units, Mermaid charts), written from the exact figures `calc report --format json` prints.
#pragma once

#include <string>

#include "report/format.h"

namespace calc {

/// Writes the report body (see src/cli/commands_report.cpp for its keys) as Markdown. With a
/// non-empty `plot_dir`, also draws each chart there as SVG (gnuplot) and links it; when gnuplot
/// is missing the document says so in one line and keeps the Mermaid charts.
std::string report_document(const ojson& body, const std::string& plot_dir);

}  // namespace calc
