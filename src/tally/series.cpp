#include "tally/series.h"

#include "tally/rules.h"

namespace calc {

checked floor_term::at(checked x) const {
  checked k = (x + offset) / ratio;
  return coef * (cap >= 0 ? min(k, cap) : k);
}

checked floor_term::sum(checked lo, checked hi) const {
  // sum_floor_div closes sum_k min(floor(k / r), cap) over k = x + offset (a triangle up to the
  // cap, then a flat run): O(1) for any range.
  return coef * sum_floor_div(lo + offset, hi + offset, ratio, cap);
}

void length_series::add(const floor_term& t) {
  if (t.coef == 0) return;
  for (floor_term& mine : terms_) {
    if (mine.offset == t.offset && mine.ratio == t.ratio && mine.cap == t.cap) {
      mine.coef += t.coef;
      return;
    }
  }
  terms_.push_back(t);
}

void length_series::add(const length_series& other, checked times) {
  constant_ += other.constant_ * times;
  for (floor_term t : other.terms_) {
    t.coef *= times;
    add(t);
  }
}

checked length_series::at(checked x) const {
  checked v = constant_;
  for (const floor_term& t : terms_) v += t.at(x);
  return v;
}

checked length_series::sum(checked lo, checked hi) const {
  if (hi < lo) return 0;
  checked v = constant_ * (hi - lo + 1);
  for (const floor_term& t : terms_) v += t.sum(lo, hi);
  return v;
}

}  // namespace calc
