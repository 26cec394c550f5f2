// The plain capacity and plan questions as typed calls (§2.6.2): a request struct in, a result
// struct out. The CLI binds options into the request and serialises the result; report builds
// its figures from the same results. Which card memory they count (runtime-visible or as sold)
// is part of the question.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/limits.h"
#include "graph/graph.h"
#include "plan/placement.h"
#include "plan/plan.h"
#include "spec/gpu_spec.h"

namespace calc {

/// Which memory figure of a card the plan counts.
enum class memory_basis {
  runtime,  // what the CUDA runtime reports (as engines see it), as sold where none is known
  as_sold,  // the vendor's decimal figure (the chapter's §2.6.2 arithmetic)
};

/// Parses "runtime" or "as-sold"; throws spec_error naming `field` otherwise.
memory_basis parse_memory_basis(const std::string& field, const std::string& text);

/// The card as a plan counts it: `memory` replaced by the figure of `basis` (the runtime figure
/// falls back to the one as sold where the catalogue has none: engine_visible_memory).
gpu_spec card_as_planned(const gpu_spec& gpu, memory_basis basis);

/// The figure actually used for `gpu` under `basis`, in words: "runtime" or "as sold" (a card
/// with no runtime figure is counted as sold even under the runtime basis).
std::string memory_basis_used(const gpu_spec& gpu, memory_basis basis);

/// The model's formats, as the answers name them.
struct formats_used {
  std::string weights;  // the weight matrices' format: the one they share, "mixed" where they
                        // differ, "given" with a weight size given
  std::string kv;
  std::string summary;  // format_summary: every storage format assumed
};

formats_used model_formats(const model_spec& s);

/// How many requests fit on a deployment of cards, per card type and length.
struct capacity_request {
  std::vector<gpu_spec> gpus;  // one row group per card type, the first one leads
  std::vector<std::int64_t> lengths;
  layout lay;                         // tp x pp cards, ep and dp within tp
  checked workspace;                  // per card
  std::optional<checked> weight_bytes;  // instead of the model's own
  std::int64_t page_tokens = 0;       // paged cache: histories rounded up to whole pages
  std::int64_t shared_prefix = 0;     // tokens every request shares, stored once
  std::optional<std::int64_t> budget_requests;  // also: the largest model beside this many
  memory_basis memory = memory_basis::runtime;
};

struct capacity_row {
  std::string gpu;  // catalogue name
  std::int64_t length = 0;
  capacity_plan plan;  // requests, per-request and free bytes on the deployment
};

struct capacity_result {
  std::string model;
  formats_used formats;
  std::string gpu;          // the first card's catalogue name
  std::string gpu_display;  // and its display name
  std::string memory_basis;  // "runtime" or "as sold": the figure used for the first card
  std::int64_t cards = 1;
  layout lay;
  checked memory_bytes;  // the first card's memory times the cards
  checked weight_bytes;
  bool given_weights = false;
  checked workspace_bytes;
  std::int64_t page_tokens = 0;
  std::int64_t shared_prefix = 0;
  checked shared_prefix_bytes;
  std::vector<capacity_row> rows;  // every card type, every length
  capacity_row first() const { return rows.front(); }
  /// With budget_requests: the largest parameter count whose weights fit beside them.
  struct budget {
    std::int64_t requests = 0;
    checked max_params;
    checked max_weight_bytes;
  };
  std::optional<budget> weight_budget;
};

/// Why a shared prefix is refused on a layout of several cards: how its stored-once history
/// splits over stages and tp ranks is not modelled (only one card's arithmetic is).
inline constexpr const char* kSharedPrefixOnOneCard =
    "is counted on one card only: how a prefix stored once splits over a layout's cards is not "
    "modelled; drop it or the layout";

/// Throws spec_error (naming request fields) for no card, no length, a shared prefix longer
/// than a length or given with a layout of several cards, or a layout the model cannot take.
/// Paged histories (page_tokens) are counted on every layout.
capacity_result answer_capacity(const graph& g, const capacity_request& q);

/// The fewest cards, and their layout, that hold `requests` requests of `length` tokens.
struct placement_request {
  gpu_spec gpu;
  std::int64_t length = 0;
  std::int64_t requests = 1;
  checked workspace;
  std::optional<std::int64_t> node_gpus;  // cards per server; none: the card's server_gpus
  std::int64_t max_gpus = limits::default_max_gpus;
  memory_basis memory = memory_basis::runtime;
};

struct placement_result {
  std::string model;
  formats_used formats;
  std::string gpu;
  std::string memory_basis;  // "runtime" or "as sold"
  checked card_memory;       // the figure counted per card
  std::int64_t length = 0;
  std::int64_t requests = 0;
  checked workspace_bytes;
  checked weight_bytes;
  placement_plan plan;  // best, the best below it, the largest count tried
};

placement_result answer_plan(const graph& g, const placement_request& q);

}  // namespace calc
