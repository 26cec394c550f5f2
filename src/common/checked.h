// Exact integer arithmetic for counts, bytes and FLOPs.
//
// Every tally in calc is an integer: parameters, FLOPs (2 per multiply-add), bytes. A 1M-token
// prefill of a trillion-parameter dense model reaches ~1e19, past int64's 9.2e18, so counts are
// held in 128 bits and every operation is checked: an overflow throws instead of wrapping.
#pragma once

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace calc {

/// 128-bit integers for exact fractions when comparing printed claims (a GCC/Clang extension).
__extension__ typedef __int128 int128;

/// Thrown when an exact count would leave the int64 range.
class overflow_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An exact integer (128-bit) whose +, -, * throw overflow_error instead of wrapping.
class checked {
 public:
  constexpr checked() = default;
  constexpr checked(std::int64_t v)
      : v_(v) {}  // NOLINT: implicit on purpose, formulas read plainly
  static constexpr checked from_wide(int128 v) {
    checked c;
    c.v_ = v;
    return c;
  }

  /// The value as int64; throws overflow_error when it does not fit.
  std::int64_t value() const {
    if (v_ > INT64_MAX || v_ < INT64_MIN) throw overflow_error("a count exceeds the 64-bit range");
    return static_cast<std::int64_t>(v_);
  }
  constexpr int128 wide() const { return v_; }
  /// The nearest double, for times and averages (exact below 2^53).
  constexpr double to_double() const { return static_cast<double>(v_); }
  constexpr bool fits_int64() const { return v_ <= INT64_MAX && v_ >= INT64_MIN; }

  friend checked operator+(checked a, checked b) {
    int128 r;
    if (__builtin_add_overflow(a.v_, b.v_, &r))
      throw overflow_error("integer overflow in addition");
    return from_wide(r);
  }
  friend checked operator-(checked a, checked b) {
    int128 r;
    if (__builtin_sub_overflow(a.v_, b.v_, &r))
      throw overflow_error("integer overflow in subtraction");
    return from_wide(r);
  }
  friend checked operator*(checked a, checked b) {
    int128 r;
    if (__builtin_mul_overflow(a.v_, b.v_, &r))
      throw overflow_error("integer overflow in multiplication");
    return from_wide(r);
  }
  /// Integer division, rounding toward zero (callers divide only exact or floor quantities).
  friend checked operator/(checked a, checked b) {
    if (b.v_ == 0) throw overflow_error("division by zero");
    return from_wide(a.v_ / b.v_);
  }
  checked& operator+=(checked b) { return *this = *this + b; }
  checked& operator*=(checked b) { return *this = *this * b; }
  friend constexpr bool operator==(checked a, checked b) { return a.v_ == b.v_; }
  friend constexpr auto operator<=>(checked a, checked b) { return a.v_ <=> b.v_; }

 private:
  int128 v_ = 0;
};

inline checked min(checked a, checked b) { return a < b ? a : b; }
inline checked max(checked a, checked b) { return a < b ? b : a; }
/// ceil(a / b) for a >= 0, b > 0.
inline checked ceil_div(checked a, checked b) { return (a + b - 1) / b; }

}  // namespace calc
