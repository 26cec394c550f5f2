#include "common/numbers.h"

#include <fmt/format.h>

namespace calc {

std::string decimal_digits(int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  __extension__ unsigned __int128 u =
      neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u > 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

std::string group_digits(std::string digits) {
  bool neg = !digits.empty() && digits[0] == '-';
  if (neg) digits.erase(digits.begin());
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it, ++n) {
    if (n > 0 && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
  }
  return neg ? "-" + out : out;
}

std::string with_commas(std::int64_t v) { return group_digits(decimal_digits(v)); }

std::string round_half_even(int128 num, int128 den, int decimals) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  bool neg = num < 0;
  if (neg) num = -num;
  int128 scale = 1, scaled = 0;
  for (int i = 0; i < decimals; ++i)
    if (__builtin_mul_overflow(scale, 10, &scale))
      throw overflow_error(fmt::format("rounding to {} decimals exceeds 128 bits", decimals));
  if (__builtin_mul_overflow(num, scale, &scaled))
    throw overflow_error(fmt::format("rounding to {} decimals exceeds 128 bits", decimals));
  int128 q = scaled / den, r = scaled % den;
  if (2 * r > den || (2 * r == den && q % 2 == 1)) ++q;
  std::string digits = decimal_digits(q);
  if (decimals > 0) {
    while (static_cast<int>(digits.size()) <= decimals) digits.insert(digits.begin(), '0');
    digits.insert(digits.end() - decimals, '.');
  }
  return (neg && q != 0 ? "-" : "") + digits;
}

ojson exact(const checked& v) {
  if (v.fits_int64()) return v.value();
  return decimal_digits(v.wide());
}

}  // namespace calc
