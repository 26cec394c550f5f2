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
  std::int64_t dp = 1;  // attention data parallel: the tp cards of a stage run attention for
                        // their own requests in dp groups of tp / dp cards (SGLang's DP attention)
  std::int64_t cards() const { return tp * pp; }
  std::int64_t attention_tp() const { return tp / dp; }  // cards one request's heads split over
};

/// "tp 8 x pp 2 (ep 8, dp 8)": the layout as printed everywhere.
std::string layout_name(const layout& l);

/// One pipeline stage's card: what it must hold.
struct card_load {
  std::int64_t stage = 0;
  std::int64_t first_layer = 0;
  std::int64_t layers = 0;
  checked weight_bytes;  // its share of the weights, small tensors replicated
  checked state_bytes;   // its share of one request's state at the length
};

/// Why a layout is not valid for a model ("" when it is): a degree below 1, a dp that does not
/// divide tp, more stages than layers, an attention tp (tp / dp) that does not divide a layer's
/// heads, an ep that does not divide the routed experts or the tp group. Expert parallelism on a
/// model without routed experts is refused: the flag would change nothing the answer shows.
/// serve's layout_problem (serve/step.h) is this one on the same cards.
std::string layout_problem(const graph& g, const layout& l);

/// One layout as it applies to one of several models compared under it (`calc report
/// --model a,b --ep 4`): expert parallelism only where the model has routed experts.
layout layout_for(const graph& g, layout l);

/// The load of every stage's card (all cards of a stage hold the same).
std::vector<card_load> card_loads(const graph& g, const layout& l, std::int64_t length);

struct fit {
  layout l;
  std::vector<card_load> loads;
  checked worst_free;  // smallest free bytes over cards after weights, workspace, states
  bool fits = false;
  std::int64_t max_requests = 0;  // requests of the length the layout holds at most: the
                                  // tightest stage's card count times the dp groups
  std::int64_t instances = 1;     // replicas of the layout serving the requests between them
  std::int64_t cards() const { return l.cards() * instances; }
  std::int64_t total_requests() const;  // max_requests over every instance (saturating)
};

/// "2 x (tp 4 x pp 1)" for replicas, else the layout's name.
std::string deployment_name(const fit& f);

/// Requests of the stage loads' length that fit with `memory` bytes per card: the tightest
/// stage decides, each dp group holds its own requests. INT64_MAX when no state grows.
std::int64_t layout_requests(const std::vector<card_load>& loads, const layout& l,
                             checked memory, checked workspace);

/// Layouts engines run on `cards` cards of `gpu` (docs/commands.md, "Layouts"): tp a power of
/// two within tp_domain (the card's NVLink domain; a card with no NVLink or a bridged one: one
/// server of `node_gpus`, over PCIe), dividing every layer's heads; pp only across domains (tp
/// fills its domain first, or a bridged card's NVLink group); ep = tp for MoE models besides
/// ep 1; dp attention (dp = tp, ep = tp) for models with MLA attention.
std::vector<layout> deployable_layouts(const graph& g, const gpu_spec& gpu, std::int64_t cards,
                                       std::int64_t node_gpus);

/// Whether `requests` requests of `length` tokens fit on the layout's cards.
fit evaluate_layout(const graph& g, const gpu_spec& gpu, const layout& l, std::int64_t length,
                    std::int64_t requests, checked workspace);

struct placement_plan {
  std::optional<fit> best;          // the fewest cards that fit, best free memory among them
  std::optional<fit> below;  // the fewer cards that come closest, and how far they fall short
  std::int64_t searched_up_to = 0;  // the largest card count tried
};

/// Searches card counts from 1 up to max_cards (beyond one node, only whole nodes): each count
/// as instances of one deployable layout (an instance within a node or of whole nodes), the
/// requests spread evenly over instances. Among the deployments of the fewest cards that fit,
/// the one that holds the most requests (then fewer stages, then more free memory) serves best.
placement_plan plan_placement(const graph& g, const gpu_spec& gpu, std::int64_t length,
                              std::int64_t requests, checked workspace, std::int64_t node_gpus,
                              std::int64_t max_cards);

}  // namespace calc
