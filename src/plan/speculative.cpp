// Speculative decoding arithmetic (speculative.h).
#include "plan/speculative.h"

#include <fmt/format.h>

#include <cmath>

#include "common/error.h"

namespace calc {

speculative_result plan_speculative(const speculative_request& q) {
  // nan compares false with everything and inf gives 0 or inf: both are refused by name.
  if (!std::isfinite(q.decode) || q.decode <= 0)
    throw spec_error("decode_time", fmt::format("give the time of one ordinary decode step (a "
                                                "finite number > 0), got {}",
                                                q.decode));
  if (!std::isfinite(q.round) || q.round <= 0)
    throw spec_error("round_time", fmt::format("give the draft + verify time of one round (a "
                                               "finite number > 0), got {}",
                                               q.round));
  if (!std::isfinite(q.accepted))
    throw spec_error("accepted", fmt::format("expected a finite number, got {}", q.accepted));
  if (q.accepted < 1) throw spec_error("accepted", "a round yields at least one valid token");
  // Past these the ratios below leave what a double prints (1e308 accepted gave a 300-digit
  // speedup and 0 ms per token): no step is a day, no round a million tokens.
  constexpr double kMostMs = 86'400'000, kLeastMs = 1e-6, kMostAccepted = 1e6;
  for (auto [name, v] : {std::pair{"decode_time", q.decode}, std::pair{"round_time", q.round}})
    if (v > kMostMs || v < kLeastMs)
      throw spec_error(name, fmt::format("{} ms is outside [{:g}, {:g}] ms (a nanosecond to a "
                                         "day)",
                                         v, kLeastMs, kMostMs));
  if (q.accepted > kMostAccepted)
    throw spec_error("accepted", fmt::format("{} tokens a round is more than the limit of {:g}",
                                             q.accepted, kMostAccepted));
  // §2.5.3: amortised time per output (T_s + T_v) / g, worth it when below T_d.
  speculative_result r;
  r.amortised = q.round / q.accepted;
  r.speedup = q.decode / r.amortised;
  r.beneficial = r.amortised < q.decode;
  r.break_even_accepted = q.round / q.decode;
  return r;
}

}  // namespace calc
