// Rendering of a command's result (one JSON object) as Markdown, CSV or JSON.
//
// Commands build an ordered JSON object with exact integers; only this module turns it into
// text. JSON and CSV keep the exact integers; Markdown shows each number, by its key, in the unit
// a reader expects: card memory and bandwidth in decimal GB and TB/s as vendors print them,
// other bytes (state, weights) in GiB/MiB/KiB as the chapter does, FLOPs in TFLOPs/GFLOPs,
// parameters in billions, lengths in tokens with K/M.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/checked.h"

namespace calc {

using ojson = nlohmann::ordered_json;

enum class output_format { md, json, csv };

/// Renders `result` (an object) in the chosen format; `title` heads the Markdown output.
std::string render(const ojson& result, output_format format, const std::string& title);

/// One Markdown table ("### name" and a row per object of `rows`), cells in human units.
std::string markdown_table(const std::string& name, const ojson& rows);

/// An exact count as JSON: an integer when it fits in 64 bits, else its decimal digits as a
/// string (JSON readers lose exactness past 2^63; calc check reads either form).
ojson exact(const checked& v);

/// A CSV field as written: quoted when it holds a comma, a quote or a newline.
std::string csv_escape(const std::string& s);

/// 1234567 -> "1,234,567".
std::string with_commas(std::int64_t v);

/// Rounds num/den to `decimals` places, half to even, exactly (Python's format rounding).
std::string round_half_even(int128 num, int128 den, int decimals);

/// Human size: "1.125 GiB", "144 KiB", "512 B" (binary units, three decimals at most).
std::string human_bytes(std::int64_t bytes);

/// Human FLOPs: "133.594 TFLOPs", "19.969 GFLOPs".
std::string human_flops(std::int64_t flops);

/// Card memory as vendors print it, decimal: "80 GB", "141 GB", "1.5 TB".
std::string human_decimal_bytes(std::int64_t bytes);

/// A transfer rate, decimal: "3.35 TB/s", "900 GB/s".
std::string human_rate(std::int64_t bytes_per_s);

/// Tokens as context lengths are spoken: "128K" (131,072), "1M", "8,000" when not a whole K.
std::string human_tokens(std::int64_t tokens);

/// Parameters in billions or millions: "8.191 B", "560.5 M".
std::string human_params(std::int64_t params);

/// Seconds as a reader wants them: "1.234 s", "12.5 ms", "850 µs".
std::string human_seconds(double s);

}  // namespace calc
