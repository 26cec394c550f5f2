// Multi-GPU placement (§2.6.2): how a layout of tensor (tp), pipeline (pp) and expert (ep)
// parallelism divides weights and per-request state over cards, and the fewest cards that fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "spec/gpu_spec.h"
#include "tally/tally.h"

namespace calc {

struct layout {
  std::int64_t tp = 1;  // tensor parallel: heads and matrix columns split over tp cards
  std::int64_t pp = 1;  // pipeline parallel: contiguous layer stages
  std::int64_t ep = 1;  // expert parallel: routed experts spread over ep cards of a stage
  std::int64_t cards() const { return tp * pp; }
};

/// One pipeline stage's card: what it must hold.
struct card_load {
  std::int64_t stage = 0;
  std::int64_t first_layer = 0;
  std::int64_t layers = 0;
  checked weight_bytes;  // its share of the weights, small tensors replicated
  checked state_bytes;   // its share of one request's state at the length
};

/// Why a layout is not valid for a model ("" when it is).
std::string layout_problem(const graph& g, const layout& l);

/// The load of every stage's card (all cards of a stage hold the same).
std::vector<card_load> card_loads(const graph& g, const layout& l, std::int64_t length);

struct fit {
  layout l;
  std::vector<card_load> loads;
  checked worst_free;  // smallest free bytes over cards after weights, workspace, states
  bool fits = false;
};

/// Whether `requests` requests of `length` tokens fit on the layout's cards.
fit evaluate_layout(const graph& g, const gpu_spec& gpu, const layout& l, std::int64_t length,
                    std::int64_t requests, checked workspace);

struct placement_plan {
  std::optional<fit> best;          // the fewest cards that fit, best free memory among them
  std::optional<fit> below;         // the best layout with fewer cards, and how far it falls short
  std::int64_t searched_up_to = 0;  // the largest card count tried
};

/// Searches card counts from 1 up to max_cards; beyond one node, only whole nodes.
placement_plan plan_placement(const graph& g, const gpu_spec& gpu, std::int64_t length,
                              std::int64_t requests, checked workspace, std::int64_t node_gpus,
                              std::int64_t max_cards);

}  // namespace calc
