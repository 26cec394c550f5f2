// Printed-precision comparison and field expressions of `calc check`.
#include "check/check.h"

#include <doctest/doctest.h>

using namespace calc;

TEST_CASE("rounding is half to even on the exact value") {
  // K3's 92 x 16 x 63 MiB = 90.5625 GiB prints as 90.562 (Python's rounding).
  auto [got, pass] = compare_printed(905625, 10000, "90.562");
  CHECK(got == "90.562");
  CHECK(pass);
  CHECK_FALSE(compare_printed(905625, 10000, "90.563").second);
  CHECK(compare_printed(3, 2, "2").second);  // 1.5 -> 2
  CHECK(compare_printed(5, 2, "2").second);  // 2.5 -> 2
}

TEST_CASE("units scale the exact value") {
  CHECK(compare_printed(1'207'959'552, 1, "1.125 GiB").second);
  CHECK(compare_printed(16'381'470'720, 1, "16.38 GB").second);
  CHECK(compare_printed(133'594'323'353'600, 1, "133.59 TFLOPs").second);
  CHECK(compare_printed(8'190'735'360, 1, "8,190,735,360").second);
  CHECK(compare_printed(150'994'944, 192'937'984, "78 %").second);
  CHECK(compare_printed(13, 1, "13 requests").second);
  auto [got, pass] = compare_printed(15'136'811'008, 1, "15,136,811,008 B");
  CHECK(got == "15,136,811,008 B");
}

TEST_CASE("a bound claim compares below the printed value") {
  CHECK(compare_printed(308'224, 1, "<0.001 billion").second);
  CHECK_FALSE(compare_printed(1'000'000, 1, "<0.001 billion").second);
}

TEST_CASE("malformed expectations are input errors") {
  CHECK_THROWS_AS(compare_printed(1, 1, "about"), spec_error);
  CHECK_THROWS_AS(compare_printed(1, 1, "12 $$"), spec_error);
}

TEST_CASE("field expressions over JSON pointers") {
  nlohmann::ordered_json doc = {{"a", 3}, {"b", {{"c", 1}}}, {"big", "12345678901234567890123"}};
  auto v = evaluate_field(doc, "/a / (/a + /b/c)");
  CHECK(v.first == 3);
  CHECK(v.second == 4);
  auto big = evaluate_field(doc, "/big");
  CHECK(big.first / 1000 == static_cast<int128>(12345678901234567890ULL));
  CHECK(big.first % 1000 == 123);
  CHECK_THROWS(evaluate_field(doc, "/missing"));
  CHECK_THROWS(evaluate_field(doc, "/a +"));
}

TEST_CASE("command lines split on spaces, quotes kept together") {
  auto w = split_command("state --model \"my model\" --length 8192");
  REQUIRE(w.size() == 5);
  CHECK(w[2] == "my model");
}
