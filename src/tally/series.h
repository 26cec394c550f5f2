// Piecewise polynomials in a length, with the floor terms that windows, compression blocks and
// chunks need. A series is a constant plus terms c * min(floor((x + offset) / ratio), cap):
// x + 1 (attention pairs of a decode query), min(x, W) (a sliding window), floor(x / 4) (CSA
// entries), min(floor(x / 128), 512) (top-k selected entries). Each term is linear between its
// breakpoints, so a series and its prefix sums evaluate exactly in O(terms), with no allocation.
#pragma once

#include <cstdint>
#include <vector>

#include "common/checked.h"

namespace calc {

/// coef * min(floor((x + offset) / ratio), cap); cap < 0 means no cap.
struct floor_term {
  checked coef;
  std::int64_t offset = 0;
  std::int64_t ratio = 1;
  std::int64_t cap = -1;

  /// The term at x (x + offset >= 0).
  checked at(checked x) const;
  /// The term summed over x in [lo, hi] (zero when hi < lo).
  checked sum(checked lo, checked hi) const;
};

/// constant + sum of floor terms, in a length x.
class length_series {
 public:
  /// Adds a constant.
  void add(checked constant) { constant_ += constant; }
  /// Adds a term; a term of the same shape (offset, ratio, cap) merges into one coefficient.
  void add(const floor_term& t);
  /// Adds every term of another series, times `times`.
  void add(const length_series& other, checked times = 1);

  /// The series at x.
  checked at(checked x) const;
  /// The series summed over x in [lo, hi] (zero when hi < lo): O(terms), whatever hi - lo.
  checked sum(checked lo, checked hi) const;

  checked constant() const { return constant_; }
  const std::vector<floor_term>& terms() const { return terms_; }

 private:
  checked constant_;
  std::vector<floor_term> terms_;
};

}  // namespace calc
