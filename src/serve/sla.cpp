#include "serve/sla.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/error.h"
#include "common/limits.h"

namespace calc::serve {

namespace {

struct probe {
  bool memory_ok = true;
  std::optional<steady_state> s;
};

probe at(const deployment& d, const sla_request& r, const coefficients& k, std::int64_t c) {
  probe p;
  try {
    scenario sc = make_scenario(d, r.cfg, c);
    // Arrivals at a rate put a Poisson number of requests in the system around the mean c:
    // the pool keeps three standard deviations of room (at 67 clients on a pool of 68, a
    // TensorRT-LLM plan simulated with 1,656 of 2,000 requests waiting for KV).
    double held = r.rate > 0 ? static_cast<double>(c) + 3 * std::sqrt(static_cast<double>(c))
                             : static_cast<double>(c);
    if (!sc.kv_pool_fits || static_cast<double>(sc.kv_requests) < held) {
      p.memory_ok = false;
      return p;
    }
    p.s = solve_steady_state(sc, k);
  } catch (const spec_error&) {
    p.memory_ok = false;
  }
  return p;
}

bool meets(const steady_state& s, const sla_request& r) {
  return s.ttft_ms <= r.ttft_ms && s.tpot_ms <= r.tpot_ms;
}

/// `v` in 3 significant digits (whole numbers from 100 up, never an exponent), more where fewer
/// would not read on its side of `bound`: a first token of 2000.4 ms against a 2000 ms target
/// is not "2000", nor 4.996 requests/s "5".
std::string apart(double v, double bound) {
  int magnitude =
      v != 0 && std::isfinite(v) ? static_cast<int>(std::floor(std::log10(std::abs(v)))) : 0;
  int decimals = std::clamp(2 - magnitude, 0, 17);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  auto reads_apart = [&] {
    double shown = std::stod(s);
    return v > bound ? shown > bound : v < bound ? shown < bound : true;
  };
  while (decimals < 17 && !reads_apart()) s = fmt::format("{:.{}f}", v, ++decimals);
  return s;
}

}  // namespace

sla_plan plan_sla(const graph& g, const gpu_spec& gpu, const coefficients& fitted,
                  const sla_request& r, int compute_bits) {
  // Arrivals at a rate come one by one: no opening burst and no cohorts in step with it, which
  // a benchmark's closed loop has (all its clients send at once to start) and the fitted
  // burst_share and cohort_share carry; `serve --rate` simulates them without either.
  coefficients k = fitted;
  if (r.rate > 0) {
    k.burst_share = 0;
    k.cohort_share = 0;
  }
  if (!(r.ttft_ms > 0) || !(r.tpot_ms > 0) || !std::isfinite(r.ttft_ms) ||
      !std::isfinite(r.tpot_ms))
    throw spec_error("sla", "give positive targets, e.g. ttft=500,tpot=30");
  if (r.rate <= 0 && r.concurrency <= 0)
    throw spec_error("load", "give the load: a rate or a concurrency");
  if (r.rate > 1e7 || !std::isfinite(r.rate)) throw spec_error("rate", "beyond 10^7 requests/s");
  bool moe = has_ffn<ffn_moe>(g);
  sla_plan out;
  double best_ttft = INFINITY, best_tpot = INFINITY;
  struct scored {
    sla_option o;
    double throughput;  // requests per second of one instance
  };
  std::vector<scored> feasible;
  std::optional<sla_option> beyond;  // the fewest GPUs past --max-gpus that meet both targets
  // Every layout evaluates the same model's tallies: compile them once. A model they cannot
  // compile fails in each layout's make_deployment below, as before.
  model_forms forms;
  try {
    forms = compile_forms(g, k.expert_zipf_s);
  } catch (const spec_error&) {
  }
  // A tp group stays within the NVLink domain, or one server over PCIe where that is wider, as
  // serve requires (domain_problem): an H200 NVL's or H100 PCIe's bridged cards run tp 8 over
  // the server's PCIe, a GB200's up to 64 within its NVL72 rack.
  const std::int64_t widest = tp_domain(gpu, server_gpus_of(gpu, r.node_gpus));
  std::int64_t widest_tp = 1;  // the widest power-of-two group: pipeline stages start past it
  while (widest_tp * 2 <= widest) widest_tp *= 2;
  // ... or past a bridged card's NVLink group, as plain plan places them (deployable_layouts).
  std::int64_t bridged_tp = 1;
  while (bridged_tp * 2 <= std::min(gpu.nvlink_domain, widest)) bridged_tp *= 2;
  for (std::int64_t tp = 1; tp <= widest; tp *= 2)
    for (std::int64_t dp = 1; tp * dp <= widest; dp *= 2) {
      if (dp > 1 && !moe) continue;  // without experts, DP attention is just more instances
      for (std::int64_t pp = 1; tp * dp * pp <= r.max_gpus && pp <= 16; pp *= 2) {
        // PP only past the widest tp group (or a bridge's, where that is narrower).
        if (pp > 1 && tp * dp < widest_tp && !(tp * dp == bridged_tp && bridged_tp > 1)) continue;
        std::vector<std::int64_t> eps = {1};
        if (moe && tp * dp > 1) eps.push_back(tp * dp);
        for (std::int64_t ep : eps) {
          if (ep == 1 && dp > 1) continue;  // DP attention goes with expert parallelism
          serve_layout lay{tp, ep, dp, pp};
          if (!layout_problem(g, lay).empty() || !engine_layout_problem(r.cfg, lay).empty())
            continue;
          ++out.layouts_tried;
          deployment d;
          try {
            d = make_deployment(g, gpu, lay, compute_bits, forms);
          } catch (const spec_error&) {
            continue;
          }
          probe one = at(d, r, k, 1);
          if (!one.s) continue;  // no room for one request: best_tpot stays infinite
          best_ttft = std::min(best_ttft, one.s->ttft_ms);
          best_tpot = std::min(best_tpot, one.s->tpot_ms);
          if (!meets(*one.s, r)) continue;
          // The largest concurrency per group that meets both targets: doubling, then bisection.
          std::int64_t lo = 1, hi = 2;
          steady_state lo_s = *one.s;
          const std::int64_t cap = std::max<std::int64_t>(1, r.cfg.max_num_seqs);
          while (hi <= cap) {
            probe p = at(d, r, k, hi);
            if (!p.s || !meets(*p.s, r)) break;
            lo = hi;
            lo_s = *p.s;
            hi *= 2;
          }
          hi = std::min(hi, cap + 1);
          while (hi - lo > 1) {
            std::int64_t mid = lo + (hi - lo) / 2;
            probe p = at(d, r, k, mid);
            if (p.s && meets(*p.s, r)) {
              lo = mid;
              lo_s = *p.s;
            } else {
              hi = mid;
            }
          }
          sla_option o;
          o.layout = lay;
          o.concurrency_per_group = lo;
          o.at = lo_s;
          double per_instance = lo_s.requests_per_s;
          if (r.rate > 0) {
            o.instances = static_cast<std::int64_t>(std::ceil(r.rate / per_instance - 1e-12));
          } else {
            std::int64_t per = lo * dp;
            o.instances = (r.concurrency + per - 1) / per;
          }
          o.instances = std::max<std::int64_t>(o.instances, 1);
          o.gpus = o.instances * lay.gpus();
          if (o.gpus > r.max_gpus) {
            // Meets the targets, on more cards than allowed: the smallest such is the answer's
            // "how many it would take".
            if (!beyond || o.gpus < beyond->gpus) beyond = o;
            continue;
          }
          feasible.push_back({o, per_instance});
        }
      }
    }
  if (feasible.empty()) {
    // Which layouts "any layout" means: a tp group within one server (serve's domain_problem).
    std::string scope = fmt::format("; tp groups within one server of {} {} cards", widest,
                                    gpu.name);
    // No layout holds the weights and a request: that binds first (no step time to compare).
    if (std::isinf(best_tpot)) {
      out.binding = "memory";
      out.reason = fmt::format(
          "the weights and one request's state fit on no layout searched (tp groups of up to {} "
          "cards, up to 16 pipeline stages, at most --max-gpus {})",
          widest, r.max_gpus);
    } else if (best_tpot > r.tpot_ms) {
      out.binding = "tpot";
      out.reason = fmt::format(
          "tpot {} ms is below the fastest step any layout reaches ({} ms "
          "at one request{})",
          r.tpot_ms, apart(best_tpot, r.tpot_ms), scope);
    } else if (best_ttft > r.ttft_ms) {
      out.binding = "ttft";
      out.reason = fmt::format(
          "ttft {} ms is below the fastest first token any layout reaches "
          "({} ms at one request{})",
          r.ttft_ms, apart(best_ttft, r.ttft_ms), scope);
    } else {
      out.binding = "gpus";
      out.reason = fmt::format("the load needs more than --max-gpus {} GPUs", r.max_gpus);
      if (beyond)
        out.reason +=
            fmt::format(": {} GPUs ({} instances of tp {} dp {} ep {} pp {}) meet both targets; {}",
                        beyond->gpus, beyond->instances, beyond->layout.tp, beyond->layout.dp,
                        beyond->layout.ep, beyond->layout.pp,
                        beyond->gpus <= limits::cards
                            ? std::string("raise --max-gpus to plan them")
                            : fmt::format("more than calc plans ({} cards)", limits::cards));
    }
    return out;
  }
  // Fewest GPUs; then the most throughput per GPU (headroom), then fewer ranks per instance.
  std::sort(feasible.begin(), feasible.end(), [](const scored& a, const scored& b) {
    if (a.o.gpus != b.o.gpus) return a.o.gpus < b.o.gpus;
    double ta = a.throughput / static_cast<double>(a.o.layout.gpus());
    double tb = b.throughput / static_cast<double>(b.o.layout.gpus());
    if (ta != tb) return ta > tb;
    return a.o.layout.gpus() < b.o.layout.gpus();
  });
  out.feasible = true;
  out.best = feasible.front().o;
  {
    // What the deployment runs at: the load asked for, not the most each instance could take.
    sla_option& b = *out.best;
    deployment d = make_deployment(g, gpu, b.layout, compute_bits, forms);
    std::int64_t c = b.concurrency_per_group;
    if (r.rate > 0) {
      // Requests/s grow with clients: the fewest per group whose loop serves an instance's share.
      double share = r.rate / static_cast<double>(b.instances);
      std::int64_t lo = 0, hi = c;
      while (hi - lo > 1) {
        std::int64_t mid = lo + (hi - lo) / 2;
        probe p = at(d, r, k, mid);
        (p.s && p.s->requests_per_s >= share ? hi : lo) = mid;
      }
      c = hi;
    } else {
      std::int64_t per_instance = (r.concurrency + b.instances - 1) / b.instances;
      c = std::min(c, (per_instance + b.layout.dp - 1) / b.layout.dp);
    }
    probe p = at(d, r, k, c);
    b.load_per_group = p.s ? c : b.concurrency_per_group;
    b.at_load = p.s ? *p.s : b.at;
  }
  std::int64_t n = out.best->gpus;
  if (n > 1) {
    // With one GPU fewer, the best layout serves at most this much.
    double most = 0;
    std::string which;
    for (const scored& s : feasible) {
      std::int64_t fit = (n - 1) / s.o.layout.gpus();
      double load = static_cast<double>(fit) *
                    (r.rate > 0 ? s.throughput
                                : static_cast<double>(s.o.concurrency_per_group * s.o.layout.dp));
      if (load > most) {
        most = load;
        which = layout_flags(s.o.layout);
      }
    }
    std::string served = apart(most, r.rate);
    // Every layout meeting the targets may be wider than n - 1 GPUs (a model that needs 8).
    if (which.empty())
      out.reason = fmt::format(
          "no layout of {} GPUs or fewer meets the targets (the smallest that does has {})", n - 1,
          std::min_element(feasible.begin(), feasible.end(), [](const scored& a, const scored& b) {
            return a.o.layout.gpus() < b.o.layout.gpus();
          })->o.layout.gpus());
    else
      out.reason =
          r.rate > 0
              ? fmt::format("{} GPUs serve at most {} requests/s within the targets ({}), below {}",
                            n - 1, served, which, r.rate)
              : fmt::format(
                    "{} GPUs hold at most {:.0f} clients within the targets ({}), below {}", n - 1,
                    most, which, r.concurrency);
  } else {
    out.reason = "one GPU meets the targets";
  }
  return out;
}

}  // namespace calc::serve
