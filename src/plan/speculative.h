// Speculative decoding (§2.5.3) as a typed question: the times of an ordinary decode step and of
// one draft + verify round, and the tokens a round yields, in; the amortised time per token, the
// speed-up and the break-even acceptance out. Not engine-specific, so it lives in plan/.
#pragma once

namespace calc {

/// T_d, T_s + T_v and g, in the units the caller chose (the CLI: milliseconds).
struct speculative_request {
  double decode = 0;    // T_d: one ordinary decode step
  double round = 0;     // T_s + T_v: draft plus verification of one round
  double accepted = 0;  // g: valid tokens per round on average (at least 1)
};

struct speculative_result {
  double amortised = 0;            // (T_s + T_v) / g per output token
  double speedup = 0;              // T_d / amortised
  bool beneficial = false;         // amortised < T_d
  double break_even_accepted = 0;  // the g at which a round costs what g decode steps cost
};

/// Throws spec_error naming the field (decode, round, accepted) for a time that is not a
/// finite positive number or an acceptance below one token.
speculative_result plan_speculative(const speculative_request& q);

}  // namespace calc
