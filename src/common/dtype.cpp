#include "common/dtype.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "common/limits.h"

namespace calc {

namespace {

const std::map<std::string, int>& element_bits() {
  static const std::map<std::string, int> bits = {
      {"fp64", 64}, {"int64", 64}, {"fp32", 32}, {"int32", 32}, {"bf16", 16}, {"fp16", 16},
      {"fp8", 8},   {"int8", 8},   {"e8m0", 8},  {"fp4", 4},    {"int4", 4},
  };
  return bits;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : text) {
    if (c == sep) {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  parts.push_back(part);
  return parts;
}

[[noreturn]] void unknown(const std::string& text);

/// The bits of a per-matrix record named `<elem>x<count>` (compressed-tensors' weight_shape:
/// int32x2, two int32 per matrix); `text` is the whole name, for the error.
int matrix_record_bits(const std::string& spec, const std::string& text) {
  auto x = spec.rfind('x');
  if (x == std::string::npos) unknown(text);
  auto elem = element_bits().find(spec.substr(0, x));
  if (elem == element_bits().end()) unknown(text);
  int count = 0;
  try {
    std::size_t used = 0;
    count = std::stoi(spec.substr(x + 1), &used);
    if (used != spec.size() - x - 1) unknown(text);
  } catch (const std::logic_error&) {
    unknown(text);
  }
  // A few values a matrix (a shape, an offset): more would be a tensor of its own.
  if (count <= 0 || count > 16)
    throw std::invalid_argument(
        fmt::format("'{}': a per-matrix record holds 1 to 16 values (e.g. matrix:int32x2)", text));
  return elem->second * count;
}

[[noreturn]] void unknown(const std::string& text) {
  throw std::invalid_argument(fmt::format(
      "unknown precision '{}' (known: bf16, fp16, fp32, fp64, fp8, int8, int4, fp4, int32, int64, "
      "mxfp4, nvfp4, <elem>:g<N>[:<scale>][:zero[:<zero>]][:rowidx:<elem>] such as int4:g128, "
      "<elem>:b<R>x<C>[:<scale>] such as fp8:b128x128:fp32, <elem>:row[:<scale>][:zero[:<zero>]] "
      "such as "
      "fp8:row:fp32, a per-matrix record :matrix:<elem>x<count> such as "
      "int4:g32:bf16:matrix:int32x2, or a mixed record "
      "such as "
      "fp8:g64:e8m0*448+bf16*64@8)",
      text));
}

}  // namespace

checked dtype::bytes(checked n) const {
  if (!parts.empty()) {
    checked width = 0, record = 0;
    for (const part& p : parts) {
      width += p.count;
      record += p.format->bytes(p.count);
    }
    record = ceil_div(record, align) * align;
    return ceil_div(n, width) * record;
  }
  checked value_bytes = ceil_div(n * bits, 8);
  if (group == 0) return value_bytes;
  checked groups = ceil_div(n, group);
  return value_bytes + ceil_div(groups * (scale_bits + zero_bits), 8);
}

checked dtype::bytes(checked n, checked rows) const {
  return bytes(n) + ceil_div(rows * row_bits, 8);
}

checked dtype::matrix_bytes(checked matrices) const {
  return matrices * ceil_div(checked(matrix_bits), 8);
}

checked dtype::blocks(checked in, checked out) const {
  if (block_rows == 0) return ceil_div(in * out, group == 0 ? 1 : group);
  if (block_cols == 0) return out;  // a scale per output row, whatever the width
  return ceil_div(out, block_rows) * ceil_div(in, block_cols);
}

checked dtype::block_bytes(checked n, checked blocks, checked rows) const {
  return ceil_div(n * bits, 8) + ceil_div(blocks * (scale_bits + zero_bits), 8) +
         ceil_div(rows * row_bits, 8);
}

dtype parse_dtype(const std::string& text) {
  if (static_cast<std::int64_t>(text.size()) > limits::format_chars)
    throw std::invalid_argument(
        fmt::format("a format name of {} characters is longer than the "
                    "limit of {}",
                    text.size(), limits::format_chars));
  if (text.find('*') != std::string::npos) {
    dtype mixed{text, 0, 0, 0, 0};
    std::string body = text;
    if (auto at = text.rfind('@'); at != std::string::npos) {
      try {
        std::size_t used = 0;
        mixed.align = std::stoi(text.substr(at + 1), &used);
        if (used != text.size() - at - 1 || mixed.align <= 0) unknown(text);
      } catch (const std::logic_error&) {
        unknown(text);
      }
      body = text.substr(0, at);
    }
    std::vector<std::string> pieces = split(body, '+');
    if (static_cast<std::int64_t>(pieces.size()) > limits::format_parts)
      throw std::invalid_argument(
          fmt::format("'{}': a record of {} parts is more than the limit "
                      "of {}",
                      text, pieces.size(), limits::format_parts));
    for (const std::string& piece : pieces) {
      auto star = piece.rfind('*');
      if (star == std::string::npos) unknown(text);
      // Records do not nest: each part is a plain or grouped format (no recursion to bound).
      if (piece.find('*') != star || piece.find('@') != std::string::npos)
        throw std::invalid_argument(
            fmt::format("'{}': a part of a record is a plain or grouped format such as "
                        "fp8:g64:e8m0*448, not itself a record",
                        text));
      std::int64_t count = 0;
      try {
        std::size_t used = 0;
        count = std::stoll(piece.substr(star + 1), &used);
        if (used != piece.size() - star - 1 || count <= 0) unknown(text);
      } catch (const std::logic_error&) {
        unknown(text);
      }
      auto format = std::make_shared<dtype>(parse_dtype(piece.substr(0, star)));
      if (format->row_bits > 0 || format->matrix_bits > 0)
        throw std::invalid_argument(fmt::format(
            "'{}': a record's values have no matrix (rowidx and matrix are for weights)", text));
      mixed.parts.push_back({count, format});
    }
    return mixed;
  }
  // Named packed formats of the OCP MX and NVIDIA specs.
  if (text == "mxfp4") return {text, 4, 32, 8, 0};
  if (text == "nvfp4") return {text, 4, 16, 8, 0};
  if (text == "mxfp8") return {text, 8, 32, 8, 0};

  std::vector<std::string> parts = split(text, ':');
  auto elem = element_bits().find(parts[0]);
  if (elem == element_bits().end()) unknown(text);
  dtype t{text, elem->second, 0, 0, 0};
  if (parts.size() == 1) return t;

  const std::string& g = parts[1];
  if (g == "row") {
    // <elem>:row[:<scale>][:zero[:<zero>]][:matrix:<elem>x<count>]: a scale (and, for
    // asymmetric weights, a zero point) per output row of each matrix (per-channel FP8 or INT8,
    // compressed-tensors' strategy "channel": weight_scale [out, 1]), bf16 unless named. Kept as
    // block_rows 1 and block_cols 0 (the whole row); no group: the count of scales needs the
    // matrix's sides, so only a matrix of known sides can be counted (tally.cpp).
    t.block_rows = 1;
    t.scale_bits = 16;
    std::size_t i = 2;
    if (i < parts.size() && parts[i] != "matrix" && parts[i] != "zero") {
      auto scale = element_bits().find(parts[i]);
      if (scale == element_bits().end()) unknown(text);
      t.scale_bits = scale->second;
      ++i;
    }
    // Zero points belong to asymmetric integer weights (compressed-tensors' int4/int8 with
    // symmetric false); a float element has none.
    if (i < parts.size() && parts[i] == "zero" && parts[0].starts_with("int")) {
      ++i;
      t.zero_bits = t.scale_bits;
      if (i < parts.size() && parts[i] != "matrix") {
        auto z = element_bits().find(parts[i]);
        if (z == element_bits().end()) unknown(text);
        t.zero_bits = z->second;
        ++i;
      }
    }
    if (i < parts.size()) {
      if (parts[i] != "matrix" || i + 2 != parts.size()) unknown(text);
      t.matrix_bits = matrix_record_bits(parts[i + 1], text);
    }
    return t;
  }
  if (g.size() >= 4 && g[0] == 'b') {
    // b<R>x<C>: a scale per block of R output rows x C input columns of each matrix, then an
    // optional scale format (bf16 unless named), nothing else (no zero points, no row term).
    auto x = g.find('x');
    if (x == std::string::npos || parts.size() > 3) unknown(text);
    try {
      std::size_t used_r = 0, used_c = 0;
      t.block_rows = std::stoi(g.substr(1, x - 1), &used_r);
      t.block_cols = std::stoi(g.substr(x + 1), &used_c);
      if (used_r != x - 1 || used_c != g.size() - x - 1) unknown(text);
    } catch (const std::logic_error&) {
      unknown(text);
    }
    // Sides up to 4096 keep R * C (the values one scale covers) an int.
    if (t.block_rows <= 0 || t.block_cols <= 0 || t.block_rows > 4096 || t.block_cols > 4096)
      throw std::invalid_argument(fmt::format(
          "'{}': block sides must be 1 to 4096 (rows x columns per scale, e.g. b128x128)", text));
    t.group = t.block_rows * t.block_cols;
    t.scale_bits = 16;
    if (parts.size() == 3) {
      auto scale = element_bits().find(parts[2]);
      if (scale == element_bits().end()) unknown(text);
      t.scale_bits = scale->second;
    }
    return t;
  }
  if (g.size() < 2 || g[0] != 'g') unknown(text);
  try {
    std::size_t used = 0;
    t.group = std::stoi(g.substr(1), &used);
    if (used != g.size() - 1 || t.group <= 0) unknown(text);
  } catch (const std::logic_error&) {
    unknown(text);
  }
  t.scale_bits = 16;  // bf16 scales unless stated
  // The parts after g<N>, each at most once and in this order (anything else is refused, so a
  // misspelt or repeated part never silently wins):
  // [:<scale>][:zero[:<zero>]][:matrix:<elem>x<count>][:rowidx:<elem>].
  std::size_t i = 2;
  auto at = [&](const char* word) { return i < parts.size() && parts[i] == word; };
  auto element = [&](std::size_t at_part) {
    auto e = element_bits().find(parts[at_part]);
    if (e == element_bits().end()) unknown(text);
    return e->second;
  };
  if (i < parts.size() && !at("zero") && !at("matrix") && !at("rowidx"))
    t.scale_bits = element(i++);
  if (at("zero")) {
    // A zero point per group: as wide as the scale, or the element named next
    // (AWQ's packed int4 zeros: int4:g128:fp16:zero:int4).
    ++i;
    t.zero_bits = t.scale_bits;
    if (i < parts.size() && !at("matrix") && !at("rowidx")) t.zero_bits = element(i++);
  }
  if (at("matrix")) {
    // A record stored once per matrix (pack-quantized's weight_shape: int4:g32:bf16:matrix:
    // int32x2).
    if (i + 1 >= parts.size()) unknown(text);
    t.matrix_bits = matrix_record_bits(parts[i + 1], text);
    i += 2;
  }
  if (at("rowidx")) {
    // One value per input row of each matrix (GPTQ's int32 g_idx:
    // int4:g128:fp16:zero:int4:rowidx:int32).
    if (i + 1 >= parts.size()) unknown(text);
    t.row_bits = element(i + 1);
    i += 2;
  }
  if (i != parts.size()) unknown(text);
  return t;
}

std::string engine_format_name(const std::string& text) {
  if (text == "bfloat16") return "bf16";
  if (text == "float16" || text == "half") return "fp16";
  if (text == "float32") return "fp32";
  if (text == "fp8_e4m3" || text == "fp8_e5m2" || text == "fp8_inc") return "fp8";
  if (text == "fp4_e2m1") return "fp4";  // SGLang's FP4 cache
  return text;
}

}  // namespace calc
