// An exact non-negative fraction of checked integers, for averages such as the growth of
// compressed state per token (3,514.25 B/token) and H* = fixed / growth.
#pragma once

#include <numeric>

#include "common/checked.h"

namespace calc {

struct fraction {
  checked num = 0;
  checked den = 1;

  fraction() = default;
  fraction(checked n, checked d = 1) : num(n), den(d) { reduce(); }  // NOLINT: implicit from counts

  void reduce() {
    std::int64_t g = std::gcd(num.value(), den.value());
    if (g > 1) {
      num = num / g;
      den = den / g;
    }
  }
  friend fraction operator+(const fraction& a, const fraction& b) {
    return {a.num * b.den + b.num * a.den, a.den * b.den};
  }
  fraction& operator+=(const fraction& b) { return *this = *this + b; }
  friend fraction operator*(const fraction& a, checked k) { return {a.num * k, a.den}; }
  bool is_integer() const { return den == 1; }
  bool is_zero() const { return num == 0; }
  double value() const {
    return static_cast<double>(num.value()) / static_cast<double>(den.value());
  }
};

}  // namespace calc
