// The report question as a typed call: what `calc report` says about models on one GPU at a set
// of lengths, as fields (state by component, crossovers, requests on the deployment, cards
// needed, roofline bounds). The document (document.h) and the CLI's JSON are both written from
// these fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/fraction.h"
#include "common/limits.h"
#include "engine/question.h"
#include "graph/graph.h"
#include "plan/capacity.h"
#include "plan/placement.h"
#include "plan/roofline.h"
#include "serve/batching.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"

namespace calc {

/// The workload of the report's time-under-load chart: `calc serve`'s steady state on each
/// model's deployment, one closed-loop concurrency after another.
struct load_request {
  serve::batching_config cfg;  // ISL, OSL and the engine's knobs
  serve::coefficients k;       // the calibration entry for the GPU and engine
  std::string engine;          // vllm, sglang, trtllm
  std::string calibration;     // "models/calibration/default.yaml (hopper/vllm)"
  std::string accuracy;        // what the calibration records of its accuracy here (sentences)
};

/// One concurrency of a model's throughput curve.
struct load_point {
  std::int64_t concurrency = 0;      // clients per attention group
  double tokens_per_s_per_user = 0;  // 1000 / TPOT
  double tokens_per_s_per_gpu = 0;   // output tokens/s of the instance over its GPUs
  double ttft_ms = 0;
  double tpot_ms = 0;
};

struct report_request {
  gpu_spec gpu;
  std::vector<std::int64_t> lengths;  // ascending
  checked workspace;                  // per card
  std::int64_t requests = 16;         // concurrent requests a deployment holds, for the cards
  std::optional<std::int64_t> node_gpus;  // cards per server; none: the card's server_gpus
  std::int64_t max_gpus = limits::default_max_gpus;
  /// The deployment every figure is for; none: each model's own, planned (plan_deployment).
  std::optional<layout> lay;
  memory_basis memory = memory_basis::runtime;
  /// With an engine, requests per deployment are what its rules hold (its KV budget on each
  /// rank, in whole blocks) instead of the plain count; its config's max_model_len, tensor and
  /// pipeline degrees (and the card, unless a KV figure is logged) are set per model and
  /// length. The deployment planned for it and the cards table are the engine's too
  /// (engine::answer_plan, as `plan --engine`): DP attention off, which calc's engine rules lack.
  std::optional<engine::capacity_request> engine;
  /// Per model, in the order answer_report takes them: the vision tower's bytes each engine
  /// budget deducts (empty: none for any).
  std::vector<checked> vision_bytes;
  /// With a workload: each model's throughput per GPU against per user (none: no such chart).
  std::optional<load_request> load;
};

struct report_component {
  std::string name;
  state_class kind = state_class::history;
  std::int64_t layers = 0;
  fraction per_token;
  std::vector<checked> bytes;  // at each length
};

struct report_point {
  std::int64_t length = 0;
  checked state_bytes;
  checked decode_read_bytes;
  std::optional<std::int64_t> batch_read_crossover;
  std::int64_t requests = 0;  // on the model's deployment; 0: the weights or one request do not fit
  std::optional<fit> cards;     // the fewest cards that hold `requests` requests
  std::int64_t searched_up_to = 0;  // the largest card count tried when none did
  std::optional<roofline_call> prefill;  // none: past the 64-bit FLOP range
  roofline_call decode;
};

struct report_model {
  std::string name;
  std::int64_t layers = 0;
  checked total_params;
  checked active_params;
  formats_used formats;
  checked weight_bytes;
  std::vector<std::pair<std::string, checked>> weights;  // bytes with the matrices in each format
  checked fixed_bytes;
  fraction per_token;
  std::optional<fraction> crossover_tokens;
  checked weight_read_bytes;
  layout lay;             // the deployment the requests and time bounds are for
  bool planned = false;   // chosen by plan_deployment, not given
  bool deployable = true;  // false: no deployment of up to `searched_up_to` cards holds one
                           // request at the longest length (the figures are for one card)
  std::int64_t searched_up_to = 0;
  std::vector<report_component> components;
  std::vector<report_point> points;  // one per length
  /// Throughput per GPU against per user on the deployment, concurrency 1, 2, 4, ... up to what
  /// the engine runs at once (max-num-seqs, the KV pool): only the points no other beats on
  /// both (the Pareto frontier), by falling tokens/s per user.
  std::vector<load_point> load;
  std::string load_note;  // why there is no curve (the weights leave no KV pool, ...)
};

struct report_data {
  gpu_spec gpu;              // as planned: memory is the figure counted
  std::string memory_basis;  // "runtime" or "as sold"
  std::optional<layout> lay;  // given; none: each model's own (report_model::lay)
  checked workspace_bytes;
  std::int64_t requests = 0;
  std::vector<std::int64_t> lengths;
  std::vector<report_model> models;
  /// The rules the requests per deployment are counted by ("vllm >=0.21 (...)"); empty: the
  /// plain count (whole histories beside the weights and the workspace).
  std::string engine;
  std::optional<load_request> load;  // the workload of the throughput chart
};

/// "history", "window", "fixed", ...: a state class as the report and the JSON name it.
const char* state_class_name(state_class k);

/// The deployment a report is on when no layout is given: among the layouts engines run
/// (deployable_layouts), the fewest cards that hold one request of `length` tokens, the one
/// holding the most among them. None when no count up to max_gpus (whole servers past one)
/// does.
struct planned_deployment {
  std::optional<fit> best;
  std::int64_t searched_up_to = 0;
};
planned_deployment plan_deployment(const graph& g, const gpu_spec& card, std::int64_t length,
                                   checked workspace, std::int64_t node_gpus,
                                   std::int64_t max_gpus, bool dp_attention = true);

/// One model at every length of the request. A prefill past the 64-bit FLOP range leaves
/// `prefill` empty; the decode bound is then for a one-token step at the length.
/// `vision_bytes`: the model's vision tower and projector, which an engine loads beside the text
/// model and which its KV budget loses (0 for a text model).
report_model answer_report_model(const graph& g, const report_request& q,
                                 checked vision_bytes = checked{0});

/// Every model, in order.
report_data answer_report(const std::vector<const graph*>& models, const report_request& q);

}  // namespace calc
