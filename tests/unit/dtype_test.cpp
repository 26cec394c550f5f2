// The one byte rule for plain and group-scaled formats (common/dtype.h).
#include "common/dtype.h"

#include <doctest/doctest.h>

#include <stdexcept>

#include "common/units.h"

using namespace calc;

TEST_CASE("plain formats") {
  CHECK(parse_dtype("bf16").bytes(512).value() == 1024);
  CHECK(parse_dtype("fp32").bytes(128 * 128).value() == 65536);
  CHECK(parse_dtype("int64").bytes(3).value() == 24);
  CHECK(parse_dtype("fp8").bytes(512).value() == 512);
  CHECK(parse_dtype("int4").bytes(3).value() == 2);  // packed, padded to a whole byte
}

TEST_CASE("group-scaled formats give the production record sizes of §2.3.6") {
  CHECK(parse_dtype("fp4:g16:fp8").bytes(512).value() == 288);   // 512/2 + 512/16
  CHECK(parse_dtype("mxfp4").bytes(128).value() == 68);          // 128/2 + 128/32
  CHECK(parse_dtype("fp8:g32:e8m0").bytes(512).value() == 528);  // 512 + 512/32
  CHECK(parse_dtype("nvfp4").bytes(16).value() == 9);
  // int4 with a bf16 scale and zero point per 128: 64 + 2 + 2 bytes per group
  CHECK(parse_dtype("int4:g128:zero").bytes(128).value() == 68);
  // AWQ: an fp16 scale and a packed int4 zero per 128; two groups are 2 x 64 + 2 x 2 + 1 bytes.
  CHECK(parse_dtype("int4:g128:fp16:zero:int4").bytes(256).value() == 133);
  CHECK_THROWS(parse_dtype("int4:g128:zero:bogus"));
  CHECK(parse_dtype("int4:g128").bytes(129).value() == 65 + 4);  // tail group padded
}

TEST_CASE("GPTQ: AWQ's groups plus an int32 per input row of each matrix (g_idx)") {
  dtype g = parse_dtype("int4:g128:fp16:zero:int4:rowidx:int32");
  CHECK(g.row_bits == 32);
  CHECK(g.zero_bits == 4);
  // A 256-input x 8-output matrix: 2048 int4 values = 1024 B; 16 groups x (2 B scale + 0.5 B
  // zero) = 40 B; 256 input rows x 4 B = 1024 B.
  CHECK(g.bytes(2048, 256).value() == 1024 + 40 + 1024);
  CHECK(g.bytes(2048).value() == 1064);  // the values alone, as a lookup would read them
  // The same matrix transposed (8 inputs, 256 outputs) stores only 8 row indices.
  CHECK(g.bytes(2048, 8).value() == 1024 + 40 + 32);
  // A zero as wide as the scale, then the rows; int8 GPTQ.
  CHECK(parse_dtype("int4:g128:zero:rowidx:int32").zero_bits == 16);
  CHECK(parse_dtype("int8:g64:fp16:zero:int8:rowidx:int32").bytes(128, 64).value() ==
        128 + 2 * 3 + 64 * 4);
  CHECK(parse_dtype("int4:g128").bytes(256, 256).value() == 128 + 4);  // no row term
  CHECK_THROWS(parse_dtype("int4:g128:rowidx"));                       // the row format is required
  CHECK_THROWS(parse_dtype("int4:g128:rowidx:bogus"));                 // an element format
  CHECK_THROWS(parse_dtype("int4:g128:rowidx:int32:fp16"));            // and it comes last
  CHECK_THROWS(parse_dtype("int4:g128:rowidx:int32*8+bf16*8@8"));      // a record has no rows
}

TEST_CASE("unknown formats are rejected with the list of known ones") {
  CHECK_THROWS_AS(parse_dtype("bf17"), std::invalid_argument);
  CHECK_THROWS_AS(parse_dtype("int4:128"), std::invalid_argument);
  CHECK_THROWS_AS(parse_dtype("int4:g0"), std::invalid_argument);
  CHECK_THROWS_AS(parse_dtype("int4:gx"), std::invalid_argument);
}

TEST_CASE("sizes on the command line") {
  CHECK(parse_bytes("2GiB").value() == 2LL << 30);
  CHECK(parse_bytes("256 MiB").value() == 256LL << 20);
  CHECK(parse_bytes("24GB").value() == 24'000'000'000);
  CHECK(parse_bytes("73.726GB").value() == 73'726'000'000);
  CHECK(parse_bytes("1024").value() == 1024);
  CHECK_FALSE(parse_bytes("-2GiB").has_value());
  CHECK_FALSE(parse_bytes("2 parsecs").has_value());
  CHECK_FALSE(parse_bytes("0.5B").has_value());
}

TEST_CASE("a group format's parts come once each, in the documented order") {
  // [:<scale>][:zero[:<zero>]][:matrix:<elem>x<count>][:rowidx:<elem>]
  dtype all = parse_dtype("int4:g128:bf16:zero:int4:matrix:int32x2:rowidx:int32");
  CHECK(all.scale_bits == 16);
  CHECK(all.zero_bits == 4);
  CHECK(all.matrix_bits == 64);
  CHECK(all.row_bits == 32);
  // A zero as wide as the scale, then the record.
  CHECK(parse_dtype("int4:g128:bf16:zero:matrix:int32x2").zero_bits == 16);
  CHECK_THROWS(parse_dtype("int4:g128:bf16:matrix:int32x2:matrix:int64x3"));  // a second record
  CHECK_THROWS(parse_dtype("int4:g128:matrix:int32x2:fp32"));                 // a scale after it
  CHECK_THROWS(parse_dtype("int4:g128:bf16:fp32"));                           // two scales
  CHECK_THROWS(parse_dtype("int4:g128:zero:zero"));
  CHECK_THROWS(parse_dtype("int4:g128:matrix"));
}
