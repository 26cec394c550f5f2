// Exact numbers as text: the decimal digits of a 128-bit count, thousands separators, rounding
// of a ratio half to even at a printed precision, and an exact count as JSON. Every layer uses
// these (spec messages, engine log lines, check's claims, report tables), so they sit at the
// bottom beside checked.h rather than in report/, which only the layers above may include.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/checked.h"

namespace calc {

using ojson = nlohmann::ordered_json;

/// The decimal digits of v, with a leading '-' when negative: "-170141183460469231731...".
std::string decimal_digits(int128 v);

/// Digits with a comma every three from the right: "-1234567" -> "-1,234,567".
std::string group_digits(std::string digits);

/// 1234567 -> "1,234,567".
std::string with_commas(std::int64_t v);

/// Rounds num/den to `decimals` places, half to even, exactly (Python's format rounding);
/// throws overflow_error past 128 bits.
std::string round_half_even(int128 num, int128 den, int decimals);

/// An exact count as JSON: an integer when it fits in 64 bits, else its decimal digits as a
/// string (JSON readers lose exactness past 2^63; calc check reads either form).
ojson exact(const checked& v);

}  // namespace calc
