// Storage formats and their byte rule.
//
// Every stored tensor has a format: plain (bf16, fp8, fp32, int64, ...) or packed with a scale
// per group of values (int4:g128, mxfp4 = fp4 with one e8m0 scale per 32, ...). One rule gives the
// bytes of n values in any format, so production record sizes fall out of the same arithmetic:
//   bytes(n) = ceil(n * bits / 8) + ceil(n / group) * (scale_bits + zero_bits) / 8
// A weight matrix may also store a value per input row (GPTQ's g_idx: the group of each row),
// so a matrix of `rows` input rows adds ceil(rows * row_bits / 8). A block-scaled format keeps
// one scale per block of R output rows x C input columns of each matrix (FP8 block quantisation's
// weight_block_size): a matrix of `in` x `out` stores ceil(out / R) * ceil(in / C) scales, the grid
// rounded up on each side, so its bytes need the matrix's sides, not only its value count.
// A plain group format counts ceil(n / group) scales per tensor (one scale per `group` values,
// the chapter's convention); one with a per-matrix record (`:matrix:`, compressed-tensors'
// pack-quantized layout of a Linear weight) counts them per output row of each matrix, as
// weight_scale [out, ceil(in / group)] stores them: the same count wherever `group` divides the
// input width. That layout is a Linear's only: tally.cpp refuses it on convolution taps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/checked.h"

namespace calc {

struct dtype {
  std::string name;    // as written, e.g. "bf16" or "int4:g128:bf16"
  int bits = 16;       // bits per value
  int group = 0;       // values sharing one scale; 0 = no scales
  int scale_bits = 0;  // bits of each group's scale
  int zero_bits = 0;   // bits of each group's zero point (0 = symmetric)
  int row_bits = 0;    // bits stored per input row of a matrix (GPTQ's g_idx: 32); 0 = none
  int block_rows = 0;  // block-scaled: output rows per scale block (R); 0 = groups of `group`
  int block_cols = 0;  // block-scaled: input columns per scale block (C); group = R * C
  /// Bits stored once per weight matrix, whatever its sides (compressed-tensors' pack-quantized
  /// weight_shape: two int32, 64 bits); 0 = none. Counted per matrix of known sides.
  int matrix_bits = 0;

  /// A mixed record: parts of `count` values each in their own format, the record padded to
  /// `align` bytes (V4-Flash's 584-byte main record: 448 fp8 values with e8m0 scales per 64,
  /// 64 bf16 values, aligned to 8). Empty for a plain format.
  struct part {
    std::int64_t count;
    std::shared_ptr<const dtype> format;
  };
  std::vector<part> parts;
  int align = 1;

  /// Bytes that n values occupy, scales and zero points included, each group padded to whole
  /// bytes; a mixed record stores ceil(n / record width) records.
  checked bytes(checked n) const;
  /// Bytes of a matrix of n values and `rows` input rows: bytes(n) plus the per-row term.
  checked bytes(checked n, checked rows) const;
  /// Bytes stored once per matrix for `matrices` matrices (whole bytes per matrix).
  checked matrix_bytes(checked matrices) const;
  /// Scale blocks of one in x out matrix in a block-scaled format: ceil(out / R) * ceil(in / C),
  /// each side rounded up on its own (a 576-row matrix takes 5 blocks of 128 rows, not 4.5).
  checked blocks(checked in, checked out) const;
  /// Bytes of n values held in matrices of `blocks` scale blocks in all and `rows` input rows:
  /// the values, a scale (and zero point) per block, and the per-row term.
  checked block_bytes(checked n, checked blocks, checked rows) const;
};

/// Parses a format name: `bf16`, `fp16`, `fp32`, `fp8`, `int8`, `int4`, `fp4`, `int64`, `mxfp4`,
/// `nvfp4`, `<elem>:g<N>[:<scale format>][:zero[:<zero format>]][:matrix:<elem>x<count>]
/// [:rowidx:<row format>]` (default scale bf16; a zero point as wide as the scale unless its
/// format is named; matrix: `count` values stored once per matrix, compressed-tensors'
/// weight_shape int32x2; rowidx: one value per input row of each matrix, GPTQ's g_idx),
/// `<elem>:row[:<scale format>][:zero[:<zero format>]][:matrix:<elem>x<count>]` (a scale, and
/// for asymmetric weights a zero point, per output row),
/// `<elem>:b<R>x<C>[:<scale format>]` (one scale per block of R output rows x C input columns
/// of each matrix, the grid rounded up per side: FP8 block quantisation, e.g.
/// fp8:b128x128:fp32), or a mixed record
/// `<format>*<count>+<format>*<count>[@<align>]`, e.g. `fp8:g64:e8m0*448+bf16*64@8`.
/// Throws std::invalid_argument with a message listing the known names.
dtype parse_dtype(const std::string& text);

/// The engines' format spellings (vLLM's --kv-cache-dtype: bfloat16, float16, fp8_e4m3, ...) as
/// calc format names; any other text unchanged. "auto" stays "auto" (the model's own).
std::string engine_format_name(const std::string& text);

}  // namespace calc
