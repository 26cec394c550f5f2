#include "plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "common/error.h"
#include "common/limits.h"
#include "tally/closed_form.h"

namespace calc {

capacity_plan plan_capacity(const graph& g, const gpu_spec& gpu, std::int64_t gpus,
                            std::int64_t length, checked workspace, checked weight_bytes) {
  capacity_plan c;
  c.length = length;
  c.memory = checked(gpu.memory) * gpus;
  c.weight_bytes = weight_bytes;
  c.workspace_bytes = workspace;
  c.per_request_bytes = tally_state(g, length).total;
  c.free_bytes = c.memory - weight_bytes - workspace;
  c.weights_fit = c.free_bytes >= 0;
  // §2.6.2: a partial state holds no request, so round down.
  if (c.weights_fit && c.per_request_bytes > 0)
    c.requests = (c.free_bytes / c.per_request_bytes).value();
  return c;
}

checked max_params(const graph& g, const gpu_spec& gpu, std::int64_t gpus, std::int64_t length,
                   checked workspace, std::int64_t requests) {
  checked available =
      checked(gpu.memory) * gpus - workspace - tally_state(g, length).total * requests;
  if (available <= 0) return 0;
  // The largest n whose weights, scales included, fit: bytes(n) is monotone, so bisect.
  const dtype& w = g.spec->precision.weights;
  checked lo = 0, hi = available * 8 / w.bits + 1;
  while (hi - lo > 1) {
    checked mid = lo + (hi - lo) / 2;
    if (w.bytes(mid) <= available) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

crossover_plan plan_crossover(const graph& g, std::int64_t length) {
  crossover_plan c;
  c.length = length;
  state_tally st = tally_state(g, length);
  // H* = fixed / growth per token (§2.3.5).
  if (st.fixed > 0 && !st.per_token.is_zero())
    c.state_crossover_tokens = fraction(st.fixed * st.per_token.den, st.per_token.num);
  c.weight_read_bytes = tally_params(g).shared_read_bytes;
  c.context_read_bytes = st.decode_read + st.decode_state_rw;
  // WE 2-2: the smallest integer B with B * context > R_W.
  if (c.context_read_bytes > 0)
    c.batch_read_crossover = (c.weight_read_bytes / c.context_read_bytes + 1).value();
  return c;
}

std::optional<std::int64_t> max_tokens_within(const graph& g, checked budget) {
  state_tally zero = tally_state(g, 0);
  if (zero.fixed > budget) return std::nullopt;
  if (tally_state(g, 1).total == zero.total) return INT64_MAX;
  // The bisection evaluates the state some 80 times: compile it once.
  closed_form cf(g);
  auto total_at = [&](std::int64_t n) { return cf.state(n).total; };
  // State is monotone in length: bisect for the last length that fits (windows cap growth).
  std::int64_t lo = 0, hi = 1;
  while (hi < (1LL << 40) && total_at(hi) <= budget) {
    lo = hi;
    hi *= 2;
  }
  if (hi >= (1LL << 40)) return INT64_MAX;
  while (hi - lo > 1) {
    std::int64_t mid = lo + (hi - lo) / 2;
    if (total_at(mid) <= budget) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

routing parse_routing(const std::string& text) {
  routing r;
  if (text == "uniform") return r;
  if (text == "concentrated") {
    r.type = routing::kind::concentrated;
    return r;
  }
  if (text.rfind("zipf:", 0) == 0) {
    r.type = routing::kind::zipf;
    try {
      std::size_t used = 0;
      r.zipf_s = std::stod(text.substr(5), &used);
      if (used == text.size() - 5 && r.zipf_s >= 0 && r.zipf_s < 100) return r;
    } catch (const std::logic_error&) {
    }
  }
  throw spec_error("routing",
                   fmt::format("'{}' is not uniform, concentrated or zipf:S (S >= 0)", text));
}

experts_form::experts_form(const graph& g, const routing& r) : r_(r) {
  model_context m{g.spec->hidden, &g.spec->precision};
  for (const layer& l : g.layers) {
    const ffn_moe* moe = std::get_if<ffn_moe>(&l.ffn);
    if (!moe) continue;
    std::vector<tensor> ts;
    add_tensors(*moe, m, ts);
    for (const tensor& t : ts) {
      if (t.per_token == 0 || !t.gemm) continue;  // expert biases are added, not routed GEMMs
      gemm e{t.instances, t.per_token, t.params / t.instances, t.instance_bytes(), t.bytes(), 0};
      if (r.type == routing::kind::zipf) {
        if (t.instances > limits::zipf_experts)
          throw spec_error("routing",
                           fmt::format("zipf routing sums one term per expert: {} experts is "
                                       "more than the limit of {}",
                                       t.instances, limits::zipf_experts));
        // Popularity of the i-th expert ~ i^-s, normalised; one table per expert count.
        auto it = std::find_if(
            popularity_.begin(), popularity_.end(),
            [&](const std::vector<double>& p) { return std::ssize(p) == t.instances; });
        if (it == popularity_.end()) {
          double norm = 0;
          for (std::int64_t i = 1; i <= t.instances; ++i) norm += std::pow(i, -r.zipf_s);
          std::vector<double> p;
          p.reserve(static_cast<std::size_t>(t.instances));
          for (std::int64_t i = 1; i <= t.instances; ++i)
            p.push_back(std::pow(i, -r.zipf_s) / norm);
          popularity_.push_back(std::move(p));
          it = popularity_.end() - 1;
        }
        e.popularity = static_cast<std::size_t>(it - popularity_.begin());
      }
      gemms_.push_back(e);
    }
  }
  if (gemms_.empty())
    throw spec_error("model", fmt::format("{} has no mixture-of-experts layer", g.spec->name));
}

experts_plan experts_form::at(std::int64_t tokens) const {
  experts_plan p;
  p.tokens = tokens;
  // Zipf routing sums one term per expert; identical layers share the sum.
  struct known {
    std::int64_t experts, dispatches;
    double distinct;
  };
  std::vector<known> zipf_distinct;
  for (const gemm& t : gemms_) {
    ++p.moe_layers;
    checked dispatches = checked(tokens) * t.per_token;
    double distinct = 0;
    switch (r_.type) {
      case routing::kind::uniform:  // dispatches spread evenly over the experts
        distinct = static_cast<double>(min(dispatches, t.instances).value());
        break;
      case routing::kind::concentrated:  // every token picks the same k experts
        distinct = static_cast<double>(std::min(t.per_token, t.instances));
        break;
      case routing::kind::zipf: {  // expected distinct experts over m*k independent draws
        auto it = std::find_if(zipf_distinct.begin(), zipf_distinct.end(), [&](const known& k) {
          return k.experts == t.instances && k.dispatches == dispatches.value();
        });
        if (it != zipf_distinct.end()) {
          distinct = it->distinct;
          break;
        }
        // Experts of equal popularity (all of them at s = 0) share one power.
        double last = NAN, term = 0;
        for (double pi : popularity_[t.popularity]) {
          if (!(pi == last)) {
            last = pi;
            term = 1 - std::pow(1 - pi, dispatches.to_double());
          }
          distinct += term;
        }
        zipf_distinct.push_back({t.instances, dispatches.value(), distinct});
        break;
      }
    }
    p.flops += checked(2) * dispatches * t.one;
    p.all_routed_bytes += t.layer_bytes;
    p.weight_read_bytes += distinct * t.bytes.to_double();
    if (p.moe_layers == 1) {
      p.experts = t.instances;
      p.top_k = t.per_token;
      p.dispatches = dispatches;
      p.distinct_experts = distinct;
      p.rows_per_expert = dispatches.to_double() / distinct;
      p.expert_params = t.one;
      p.expert_bytes = t.bytes;
      p.layer_expert_bytes = t.layer_bytes;
      p.layer_weight_read_bytes = distinct * t.bytes.to_double();
      p.uniform_layer_read_bytes = min(dispatches, t.instances) * t.bytes;
      p.concentrated_layer_read_bytes = checked(std::min(t.per_token, t.instances)) * t.bytes;
    }
  }
  return p;
}

experts_plan plan_experts(const graph& g, std::int64_t tokens, const routing& r) {
  return experts_form(g, r).at(tokens);
}

}  // namespace calc
