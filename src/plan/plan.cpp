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

const dtype* matrices_format(const precision_spec& p) {
  const dtype* first = p.attention_weights();
  for (const dtype* f : {p.attention_out_weights(), p.expert_weights(), p.shared_expert_weights(),
                         p.dense_ffn_weights()})
    if (f->name != first->name) return nullptr;
  return first;
}

checked budget_bytes(const graph& g, checked params) {
  if (const dtype* one = matrices_format(g.spec->precision)) return one->bytes(params);
  params_tally t = tally_params(g);
  return params * t.weight_bytes / t.total;
}

checked max_params(const graph& g, const gpu_spec& gpu, std::int64_t gpus, std::int64_t length,
                   checked workspace, std::int64_t requests) {
  // Every card keeps its workspace, as the free bytes count it.
  checked available =
      checked(gpu.memory) * gpus - workspace * gpus - tally_state(g, length).total * requests;
  if (available <= 0) return 0;
  // Weight matrices of mixed formats (gpt-oss: BF16 attention, MXFP4 experts) have no one
  // format to price the budget in: in the model's own bytes per parameter, exactly (floor of
  // available x params / weight bytes).
  const dtype* one = matrices_format(g.spec->precision);
  if (one == nullptr) {
    params_tally t = tally_params(g);
    return available * t.total / t.weight_bytes;
  }
  // The largest n whose weights, scales included, fit: bytes(n) is monotone, so bisect. The
  // matrices' one format prices it (DeepSeek-V3's FP8 blocks, not its `weights` default).
  const dtype& w = *one;
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
                   fmt::format("'{}' is not uniform, concentrated or zipf:S (0 <= S < 100)", text));
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
      if (r.type == routing::kind::zipf && t.instances > limits::zipf_experts)
        throw spec_error("routing", fmt::format("zipf routing sums one term per expert: {} "
                                                "experts is more than the limit of {}",
                                                t.instances, limits::zipf_experts));
      // GEMMs of one expert count and top-k touch the same experts: one shape for them all.
      auto it = std::find_if(shapes_.begin(), shapes_.end(), [&](const shape& s) {
        return s.instances == t.instances && s.per_token == t.per_token;
      });
      if (it == shapes_.end()) {
        shapes_.push_back({t.instances, t.per_token, {}});
        it = shapes_.end() - 1;
        if (r.type == routing::kind::zipf) {
          // Popularity of the i-th expert ~ i^-s, normalised.
          double norm = 0;
          for (std::int64_t i = 1; i <= t.instances; ++i) norm += std::pow(i, -r.zipf_s);
          std::vector<double> p;
          p.reserve(static_cast<std::size_t>(t.instances));
          for (std::int64_t i = 1; i <= t.instances; ++i)
            p.push_back(std::pow(i, -r.zipf_s) / norm);
          // A token picks k distinct experts, not k draws with repeats: expert i is among its
          // k with probability pi_i = min(1, c p_i), c such that the pi_i sum to k (sampling
          // proportional to popularity without replacement; the most popular capped at
          // certainty, the rest scaled). One token then touches exactly k experts.
          std::vector<double> pi;
          double k = static_cast<double>(std::min(t.per_token, t.instances));
          // The popularity of the uncapped experts is 1 - p_1 - ... - p_capped; at a steep
          // popularity that difference cancels to rounding noise, and scaling by it gave fewer
          // than k experts per token (zipf:20 counted 6 of DeepSeek-V3's 8). Below 1e-3 it is
          // summed from the tail instead. (Above, the difference is exact to ~1e-16 and is kept:
          // the calibration's fit is sensitive to its last bits, and a refit of the same rows
          // should give the same table.)
          std::vector<double> tail(p.size() + 1, 0.0);
          for (std::size_t i = p.size(); i-- > 0;) tail[i] = tail[i + 1] + p[i];
          std::size_t capped = 0;  // p falls with i: the capped experts are a prefix
          double rest = 1;
          auto uncapped = [&] { return rest < 1e-3 ? tail[capped] : rest; };
          while (capped < p.size() && uncapped() > 0 &&
                 (k - static_cast<double>(capped)) / uncapped() * p[capped] >= 1) {
            rest -= p[capped];
            ++capped;
          }
          double left = uncapped();
          double c = left > 0 ? (k - static_cast<double>(capped)) / left : 0;
          pi.reserve(p.size());
          for (std::size_t i = 0; i < p.size(); ++i) pi.push_back(i < capped ? 1.0 : c * p[i]);
          // A certain expert's is -inf, whose exp is 0 at any token count.
          it->log_miss.reserve(pi.size());
          for (double x : pi) it->log_miss.push_back(std::log1p(-x));
        }
      }
      checked one = t.params / t.instances;
      if (gemms_.empty()) {
        first_one_ = one;
        first_bytes_ = t.instance_bytes();
        first_layer_bytes_ = t.bytes();
      }
      gemms_.push_back(
          {static_cast<std::size_t>(it - shapes_.begin()), t.instance_bytes().to_double()});
      flops_per_token_ += checked(2) * t.per_token * one;  // sum over GEMMs of 2 k one
      all_routed_bytes_ += t.bytes();
    }
  }
  if (gemms_.empty())
    throw spec_error("model", fmt::format("{} has no mixture-of-experts layer", g.spec->name));
}

experts_plan experts_form::at(std::int64_t tokens) const {
  experts_plan p;
  p.tokens = tokens;
  p.moe_layers = std::ssize(gemms_);
  // Expected distinct experts per layer, one value per shape.
  std::vector<double> distinct(shapes_.size());
  for (std::size_t j = 0; j < shapes_.size(); ++j) {
    const shape& s = shapes_[j];
    checked dispatches = checked(tokens) * s.per_token;
    switch (r_.type) {
      case routing::kind::uniform:  // dispatches spread evenly over the experts
        distinct[j] = static_cast<double>(min(dispatches, s.instances).value());
        break;
      case routing::kind::concentrated:  // every token picks the same k experts
        distinct[j] = tokens > 0 ? static_cast<double>(std::min(s.per_token, s.instances)) : 0;
        break;
      case routing::kind::zipf: {  // expected distinct experts over m tokens of k each
        // Experts of equal inclusion (all of them at s = 0) share one exp. No token touches
        // no expert (a certain expert's 0 x -inf would read NaN).
        double last = NAN, term = 0, sum = 0;
        if (tokens <= 0) {
          distinct[j] = 0;
          break;
        }
        for (double lm : s.log_miss) {
          if (!(lm == last)) {
            last = lm;
            term = 1 - std::exp(static_cast<double>(tokens) * lm);
          }
          sum += term;
        }
        distinct[j] = sum;
        break;
      }
    }
  }
  // F = sum over GEMMs of 2 (m k) one: exact integers, summed once per model.
  p.flops = checked(tokens) * flops_per_token_;
  p.all_routed_bytes = all_routed_bytes_;
  for (const gemm& t : gemms_) p.weight_read_bytes += distinct[t.shape] * t.bytes;
  const shape& f = shapes_[gemms_.front().shape];
  double d = distinct[gemms_.front().shape];
  p.experts = f.instances;
  p.top_k = f.per_token;
  p.dispatches = checked(tokens) * f.per_token;
  p.distinct_experts = d;
  p.rows_per_expert = d > 0 ? p.dispatches.to_double() / d : 0;
  p.expert_params = first_one_;
  p.expert_bytes = first_bytes_;
  p.layer_expert_bytes = first_layer_bytes_;
  p.layer_weight_read_bytes = d * first_bytes_.to_double();
  p.uniform_layer_read_bytes = min(p.dispatches, f.instances) * first_bytes_;
  p.concentrated_layer_read_bytes = checked(std::min(f.per_token, f.instances)) * first_bytes_;
  return p;
}

experts_plan plan_experts(const graph& g, std::int64_t tokens, const routing& r) {
  return experts_form(g, r).at(tokens);
}

}  // namespace calc
