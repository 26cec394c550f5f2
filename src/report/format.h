// Rendering of a command's result (one JSON object) as Markdown, CSV or JSON.
//
// Commands build an ordered JSON object with exact integers and declare, beside it, the unit of
// each value (a `unit_map`); only this module turns them into text. JSON keeps the exact
// integers; CSV is tidy (one header row, one row per record); Markdown shows each number in its
// declared unit as a reader expects it: card memory and bandwidth in decimal GB and TB/s as
// vendors print them, other bytes (state, weights) in GiB/MiB/KiB as the chapter does, FLOPs in
// TFLOPs/GFLOPs, parameters in M/B/T params, lengths in tokens, times in one unit per table.
// Nothing here reads a unit from the spelling of a key: a value with no declared unit prints as
// a plain number.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/checked.h"
#include "common/numbers.h"  // with_commas, round_half_even, exact: used below report/ too

namespace calc {

enum class output_format { md, json, csv };

/// What a value measures, declared by the command that produces it; Markdown picks the printed
/// unit from this, never from the key.
enum class unit {
  count,          // a plain count: 1,234,567 (also what an undeclared integer prints as)
  bytes,          // stored or moved bytes, binary: 1.125 GiB, 144 KiB
  bytes_as_sold,  // card memory as vendors print it, decimal: 80 GB
  rate,           // bytes per second, decimal: 3.35 TB/s
  flops,          // 133.594 TFLOPs
  tflops,         // a vendor peak already in TFLOPs: 989.4 (0: none, "—")
  params,         // parameters: 8.191 B params, 560.5 M params, 2.779 T params
  tokens,         // a length or token count: 128K (131,072), 128,000
  seconds,        // a time in seconds; a table prints all its times in one unit
  milliseconds,   // a time in milliseconds; likewise
  microseconds,   // a time in microseconds; likewise
  ratio,          // a plain number (a speedup, a fraction): 1.234
  error_measure,  // a measured error or tolerance: four significant digits, 1.2e-07 when tiny
  source,         // a citation: Markdown shows the sites it cites, JSON and docs the full text
};

/// The units of a result's values, by path: a top-level key ("total_bytes"), a key inside an
/// object ("prefill.flops"), a column of a table ("components.bytes"), or every key of an object
/// or every column of a table ("tensors.*"). `distinct_rows`: Markdown leaves out a summary row
/// whose printed value repeats one above it (JSON keeps every key).
struct unit_map {
  std::map<std::string, unit> of;
  bool distinct_rows = false;

  unit_map() = default;
  /// Declared by unit: {{unit::bytes, {"total_bytes", "components.bytes"}}, ...}.
  unit_map(std::initializer_list<std::pair<unit, std::vector<std::string>>> groups);
  /// The declared unit of a path, or nullptr.
  const unit* find(const std::string& path) const;
};

/// Renders `result` (an object) in the chosen format; `title` heads the Markdown output and
/// `units` says what each value measures.
std::string render(const ojson& result, output_format format, const std::string& title,
                   const unit_map& units = {});

/// One Markdown table ("### name" and a row per object of `rows`), cells in their declared
/// units (`units` paths are "name.column").
std::string markdown_table(const std::string& name, const ojson& rows, const unit_map& units = {});

/// Column alignment of an aligned Markdown table.
enum class align { left, right };

/// A Markdown table whose columns are padded to one width, so it reads as a table in a terminal
/// too. `aligns` may be shorter than the header: missing columns align right when every cell
/// looks like a number, else left.
std::string aligned_table(const std::vector<std::string>& head,
                          const std::vector<std::vector<std::string>>& rows,
                          std::vector<align> aligns = {});

/// The CSV of a result: tidy. A result with one table prints that table, each row preceded by
/// the result's single values (`model,length,state_bytes,...`); several tables print one
/// section each (a `# name` line, a header, the rows) after a section of the single values.
/// Arrays of plain values in a cell are joined with ';'; no cell holds JSON.
std::string tidy_csv(const ojson& result);

/// A CSV field as written: quoted when it holds a comma, a quote or a newline.
std::string csv_escape(const std::string& s);

/// Human size: "1.125 GiB", "144 KiB", "512 B" (binary units, three decimals at most).
std::string human_bytes(std::int64_t bytes);

/// Human FLOPs: "133.594 TFLOPs", "19.969 GFLOPs".
std::string human_flops(std::int64_t flops);

/// Card memory as vendors print it, decimal: "80 GB", "141 GB", "1.5 TB".
std::string human_decimal_bytes(std::int64_t bytes);

/// A transfer rate, decimal: "3.35 TB/s", "900 GB/s".
std::string human_rate(std::int64_t bytes_per_s);

/// Tokens as asked: a power of two of at least 1,024 as K or M ("128K" is 131,072, "1M"),
/// any other count with thousands separators ("128,000", "3,072").
std::string human_tokens(std::int64_t tokens);

/// Parameters in trillions, billions or millions, never with a bytes unit: "8.191 B params",
/// "560.5 M params", "2.779 T params".
std::string human_params(std::int64_t params);

/// Seconds as a reader wants them: "1.234 s", "12.5 ms", "850 µs".
std::string human_seconds(double s);

/// One time unit for a table's times in seconds ("s", "ms" or "µs"): the one that prints fewest
/// of them below 1 or with five digits or more before the point; on a tie, the larger.
std::string time_unit(const std::vector<double>& seconds);

/// Seconds in a given unit ("s", "ms", "µs"), never in scientific notation: whole from 1,000 on
/// ("342,456 ms"), three decimals from 1 ("4.879 ms"), three significant digits below ("0.0202
/// ms").
std::string seconds_in(double s, const std::string& unit);

/// A citation, short: the sites its URLs name ("glennklockwood.com, anandtech.com"), or its
/// first clause when it names none.
std::string short_source(const std::string& text);

}  // namespace calc
