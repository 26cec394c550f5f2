// Rendering of a command's result (one JSON object) as Markdown, CSV or JSON.
//
// Commands build an ordered JSON object with exact integers; only this module turns it into
// text. Markdown shows each number exactly and, by its key, in the unit a reader expects:
// keys ending in `bytes` also in GiB/MiB/KiB, keys with `flops` in TFLOPs/GFLOPs, keys with
// `params` in billions.
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

}  // namespace calc
