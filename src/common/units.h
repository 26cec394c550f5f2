// Units of the chapter (GB = 1e9 B, GiB = 2^30 B) and parsing of sizes given on the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/checked.h"

namespace calc {

constexpr std::int64_t KiB = 1LL << 10;
constexpr std::int64_t MiB = 1LL << 20;
constexpr std::int64_t GiB = 1LL << 30;
constexpr std::int64_t TiB = 1LL << 40;
constexpr std::int64_t KB = 1000LL;
constexpr std::int64_t MB = 1000LL * KB;
constexpr std::int64_t GB = 1000LL * MB;
constexpr std::int64_t TB = 1000LL * GB;

/// Parses a byte size such as `2GiB`, `256 MiB`, `24GB`, `1.5GiB` or `1024` (bytes).
/// Fractional values are allowed when the result is a whole number of bytes.
/// Returns nullopt when the text is not a size.
std::optional<std::int64_t> parse_bytes(const std::string& text);

/// Parses a token count as context lengths are spoken: `8192`, `128K` (= 131,072), `1M`
/// (= 1,048,576), `4G`; the suffixes K, M, G (either case) are powers of 1024. Returns nullopt
/// when the text is not such a count or when it passes 2^62.
std::optional<std::int64_t> parse_token_count(const std::string& text);

/// True when `text` has the shape of a token count (digits and an optional K/M/G suffix),
/// whatever its size: lets a caller tell "too large" from "not a number".
bool looks_like_token_count(const std::string& text);

}  // namespace calc
