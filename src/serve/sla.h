// SLA search: the fewest GPUs, and the layout (TP/EP/DP/PP, clients per instance, instances),
// that meet a TTFT and a TPOT target at an arrival rate or a total concurrency, using the
// steady state of serve/batching.h. Monotone by construction: each layout's largest
// concurrency meeting the targets shrinks with stricter targets, and the instances needed grow
// with the load, so a stricter target or a higher load never needs fewer GPUs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/limits.h"
#include "serve/batching.h"

namespace calc::serve {

struct sla_request {
  double ttft_ms = 0;
  double tpot_ms = 0;
  double rate = 0;               // requests per second (0: use concurrency)
  std::int64_t concurrency = 0;  // clients in all (closed loop)
  batching_config cfg;           // isl, osl and the engine's knobs
  // TP stays within the GPU's NVLink domain, or one server of these over PCIe (tp_domain); none:
  // the card's server_gpus.
  std::optional<std::int64_t> node_gpus;
  std::int64_t max_gpus = limits::default_max_gpus;
};

/// One candidate deployment.
struct sla_option {
  serve_layout layout;
  std::int64_t concurrency_per_group = 0;  // clients per attention group (largest that meets it)
  std::int64_t instances = 0;
  std::int64_t gpus = 0;
  steady_state at;  // the steady state at that concurrency
  // The chosen option's operating point: the clients per attention group that carry the load
  // asked for, spread over its instances (for a rate, the fewest whose closed loop serves an
  // instance's share), and the steady state there.
  std::int64_t load_per_group = 0;
  steady_state at_load;
};

struct sla_plan {
  bool feasible = false;
  std::optional<sla_option> best;
  std::string reason;   // infeasible: the binding constraint; feasible: why fewer GPUs fail
  std::string binding;  // "ttft", "tpot", "memory" or "" when feasible
  std::int64_t layouts_tried = 0;
};

/// Searches every layout of up to max_gpus GPUs (tp, dp powers of two within a node and the
/// NVLink domain, ep spanning the stage's ranks for MoE, pp past the widest tp group).
sla_plan plan_sla(const graph& g, const gpu_spec& gpu, const coefficients& k, const sla_request& r,
                  int compute_bits = 0);

}  // namespace calc::serve
