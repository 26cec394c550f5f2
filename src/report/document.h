// The `calc report` document: a Markdown page a person reads (summary, compact tables in human
// units, Mermaid charts with legend tables), written from the exact figures `calc report
// --format json` prints; and the same figures as tidy CSV.
#pragma once

#include <string>
#include <vector>

#include "report/data.h"
#include "report/format.h"

namespace calc {

/// Where a report's files go.
struct report_files {
  std::string plot_dir;  // SVG charts are drawn here (empty: Mermaid only)
  std::string output;    // the file the document is written to (empty: standard output); chart
                         // links are relative to its folder
  std::string stem;      // every chart file's name starts with it (chart_stem)
};

/// Writes the report's figures as Markdown. With a plot folder, also draws each chart there as
/// SVG (gnuplot) and links it; when gnuplot is missing the document says so in one line and
/// keeps the Mermaid charts. Chart files are named from `files.stem`, so two reports never
/// share one.
std::string report_document(const report_data& r, const report_files& files);

/// The reports (one per GPU) as tidy CSV, in four sections (a `# name` line, a header, the
/// rows): `points` (one row per GPU, model and length, the deployment's values on each),
/// `components` (one row per model, state component and length), `models` (one row per GPU
/// and model, its weight bytes under each format as columns) and `load` (one row per GPU,
/// model and concurrency of the throughput chart).
std::string report_csv(const std::vector<report_data>& reports);

/// The stem every chart file of this report starts with: the output file's stem, else
/// "report-" and eight hex digits of a digest of the body.
std::string chart_stem(const ojson& body, const std::string& output);

}  // namespace calc
